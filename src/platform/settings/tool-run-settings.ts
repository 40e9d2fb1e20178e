/**
 * The background tool runs' settings (docs/tool-runs.md "Settings"):
 * - `TOOL_RUNS_STORE_URL` switches background runs and schedules on (their doors answer 501
 *   `tool-runs-not-configured` without it; decisions §15). The runs themselves live in ToolRun
 *   objects; D1 holds the listing index;
 * - `TOOL_RUNS_RETENTION_SECONDS`: how long a finished run stays readable;
 * - `TOOL_RUNS_MAX_ATTEMPTS`: how many times a run is started before an interrupted one is failed.
 */
import { d1StoreUrl, intSetting } from "./store-url";

export interface ToolRunSettings {
  /** `TOOL_RUNS_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
  /** `TOOL_RUNS_RETENTION_SECONDS`: a finished run's lifetime (default 7 days). */
  retentionSeconds: number;
  /** `TOOL_RUNS_MAX_ATTEMPTS`: starts a run gets; a run interrupted that many times fails (default 3). */
  maxAttempts: number;
}

export const TOOL_RUNS_DEFAULTS = { retentionSeconds: 604_800, maxAttempts: 3 } as const;

export function parseToolRunSettings(env: Record<string, unknown>, errors: string[]): ToolRunSettings {
  return {
    storeUrl: d1StoreUrl(env, "TOOL_RUNS_STORE_URL", errors),
    retentionSeconds: intSetting(env, "TOOL_RUNS_RETENTION_SECONDS", TOOL_RUNS_DEFAULTS.retentionSeconds, 60, 31_536_000, errors),
    maxAttempts: intSetting(env, "TOOL_RUNS_MAX_ATTEMPTS", TOOL_RUNS_DEFAULTS.maxAttempts, 1, 10, errors),
  };
}
