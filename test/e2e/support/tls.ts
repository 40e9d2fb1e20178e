/** The throwaway PKI for loopback HTTPS receivers: it lives with the bench (scripts/bench/tls.ts), which needs it too. */
export * from "../../../scripts/bench/tls";
