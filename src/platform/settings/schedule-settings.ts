/**
 * The schedules' settings (docs/schedules.md "Settings"). Schedules fire as background tool runs,
 * so they are switched on by `TOOL_RUNS_STORE_URL` (tool-run-settings.ts); here only the catch-up
 * rule's window.
 */
import { type EnvVars, wholeNumber } from "./define";

export const SCHEDULES_CATCH_UP_WINDOW_SECONDS = wholeNumber("SCHEDULES_CATCH_UP_WINDOW_SECONDS", {
  area: "schedules",
  default: 86_400,
  min: 0,
  max: 2_592_000,
  description:
    "After downtime, the missed slots of a schedule are caught up with one fire when the latest of them is at most this old; older, they are skipped and the schedule waits for its next slot. 0 never catches up.",
});

export const SCHEDULE_SETTINGS = [SCHEDULES_CATCH_UP_WINDOW_SECONDS] as const;

export interface ScheduleSettings {
  catchUpWindowSeconds: number;
}

export function parseScheduleSettings(env: EnvVars, errors: string[]): ScheduleSettings {
  return { catchUpWindowSeconds: SCHEDULES_CATCH_UP_WINDOW_SECONDS.read(env, errors) };
}
