/** Lives with the bench (scripts/bench/signature.ts), which uses it too; the suites import it from here. */
export * from "../../../scripts/bench/signature";
