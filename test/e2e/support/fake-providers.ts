/** Lives with the bench (scripts/bench/fake-providers.ts), which uses it too; the suites import it from here. */
export * from "../../../scripts/bench/fake-providers";
