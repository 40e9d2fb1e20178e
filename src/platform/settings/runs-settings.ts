/** Run traces' settings (docs/observability.md "Settings"). */
import { type EnvVars, wholeNumber } from "./define";

export const RUNS_TRACE_RETENTION_SECONDS = wholeNumber("RUNS_TRACE_RETENTION_SECONDS", {
  area: "runs",
  default: 604_800,
  min: 60,
  max: 31_536_000,
  description:
    "How long the trace of a run outside the bridge (direct, background and scheduled tool runs, agent runs, hook fires) and its summary row live; a turn's trace lives as long as its record.",
});

export const RUNS_SETTINGS = [RUNS_TRACE_RETENTION_SECONDS] as const;

export interface RunsSettings {
  traceRetentionSeconds: number;
}

export function parseRunsSettings(env: EnvVars, errors: string[]): RunsSettings {
  return { traceRetentionSeconds: RUNS_TRACE_RETENTION_SECONDS.read(env, errors) };
}
