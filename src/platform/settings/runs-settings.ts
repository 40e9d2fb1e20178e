/**
 * Run traces' settings (docs/observability.md "Settings"):
 * - `RUNS_TRACE_RETENTION_SECONDS`: how long the trace of a run outside the bridge (tool runs,
 *   agent runs, hook fires: kept by the IndexShards) and its summary row live. A turn's trace
 *   lives as long as the record it belongs to (`CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS`).
 */
import { intSetting } from "./store-url";

export interface RunsSettings {
  /** `RUNS_TRACE_RETENTION_SECONDS` (default 7 days). */
  traceRetentionSeconds: number;
}

export const RUNS_DEFAULTS = { traceRetentionSeconds: 604_800 } as const;

export function parseRunsSettings(env: Record<string, unknown>, errors: string[]): RunsSettings {
  return {
    traceRetentionSeconds: intSetting(env, "RUNS_TRACE_RETENTION_SECONDS", RUNS_DEFAULTS.traceRetentionSeconds, 60, 31_536_000, errors),
  };
}
