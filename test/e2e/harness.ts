/**
 * The end-to-end harness: it lives with the bench (scripts/bench/harness.ts), which starts the
 * bridge the same way without reaching into the test tree; the suites import it from here.
 */
export * from "../../scripts/bench/harness";
