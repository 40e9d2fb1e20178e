/** Lives with the bench (scripts/bench/restartable-https.ts), which uses it too; the suites import it from here. */
export * from "../../../scripts/bench/restartable-https";
