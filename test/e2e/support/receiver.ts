/** Lives with the bench (scripts/bench/receiver.ts), which uses it too; the suites import it from here. */
export * from "../../../scripts/bench/receiver";
