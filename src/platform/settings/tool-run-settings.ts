/**
 * The background tool runs' settings (docs/tool-runs.md "Settings"). The runs live in ToolRun
 * objects; the store holds their listing index. The store switch also turns schedules and hooks on
 * (decisions §15).
 */
import { type EnvVars, storeUrl, wholeNumber } from "./define";

export const TOOL_RUNS_STORE_URL = storeUrl("TOOL_RUNS_STORE_URL", {
  area: "tool-runs",
  what: "The background tool runs' store (the runs listing; runs in ToolRun objects, schedules in Schedule objects)",
  unset: "every tool-runs, schedules and hooks door answers 501 tool-runs-not-configured, and schedules pause",
  gate: { code: "tool-runs", what: "tool runs store" },
});

export const TOOL_RUNS_RETENTION_SECONDS = wholeNumber("TOOL_RUNS_RETENTION_SECONDS", {
  area: "tool-runs",
  default: 604_800,
  min: 60,
  max: 31_536_000,
  description: "How long a finished background tool run stays readable.",
});

export const TOOL_RUNS_MAX_ATTEMPTS = wholeNumber("TOOL_RUNS_MAX_ATTEMPTS", {
  area: "tool-runs",
  default: 3,
  min: 1,
  max: 10,
  description: "Starts a background tool run gets; one interrupted (its object restarted mid-run) that many times fails.",
});

export const TOOL_RUN_SETTINGS = [TOOL_RUNS_STORE_URL, TOOL_RUNS_RETENTION_SECONDS, TOOL_RUNS_MAX_ATTEMPTS] as const;

export interface ToolRunSettings {
  storeUrl: string | null;
  retentionSeconds: number;
  maxAttempts: number;
}

export function parseToolRunSettings(env: EnvVars, errors: string[]): ToolRunSettings {
  return {
    storeUrl: TOOL_RUNS_STORE_URL.read(env, errors),
    retentionSeconds: TOOL_RUNS_RETENTION_SECONDS.read(env, errors),
    maxAttempts: TOOL_RUNS_MAX_ATTEMPTS.read(env, errors),
  };
}
