/**
 * `retry` (wrapper): runs the call again after a transient failure — the endpoint did not answer
 * in time (`timeout`) or could not be reached (`transport`) — up to `attempts` tries in all,
 * waiting `backoff_ms` before the second and doubling each time. Any other outcome (success, an
 * HTTP status, invalid kwargs, a denial, a tool error) is final at once: those would fail again.
 * Every attempt is one step of the run's trace, named `<tool> (attempt k of n)`.
 *
 * A retried call may already have acted (a timeout does not say the endpoint did nothing), so
 * put `retry` only on tools that are safe to repeat.
 */
import { z } from "zod";
import type { CallResult, ExtensionCall, ExtensionDef } from "./model";

export const RetryConfig = z
  .object({
    attempts: z.number().int().min(1).max(5).default(3),
    backoff_ms: z.number().int().min(0).max(2000).default(200),
  })
  .strict();
export type RetryConfig = z.infer<typeof RetryConfig>;

/** The failure kinds worth another try. */
export const TRANSIENT_KINDS: ReadonlySet<string> = new Set(["timeout", "transport"]);

/** The wait after failed attempt `k` (1-based) before the next. Pure. */
export function backoffDelay(config: RetryConfig, k: number): number {
  return config.backoff_ms * 2 ** (k - 1);
}

/** Runs `next` up to `config.attempts` times while it fails transiently. */
export async function withRetry(config: RetryConfig, call: ExtensionCall, next: () => Promise<CallResult>): Promise<CallResult> {
  for (let k = 1; ; k++) {
    const r = await call.step(`${call.tool} (attempt ${k} of ${config.attempts})`, next);
    if (r.ok || !TRANSIENT_KINDS.has(r.kind) || k >= config.attempts) return r;
    await call.sleep(backoffDelay(config, k));
  }
}

export const retry: ExtensionDef<RetryConfig> = {
  name: "retry",
  kind: "wrapper",
  description:
    "Retries the call after a transient failure (timeout, transport) up to `attempts` tries in all (default 3, at most 5), waiting `backoff_ms` (default 200, at most 2000) and doubling. Only for tools safe to repeat.",
  config: RetryConfig,
  apply: withRetry,
};
