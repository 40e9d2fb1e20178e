/**
 * The schedules' settings (docs/schedules.md "Settings"). Schedules fire as background
 * tool runs, so they are switched on by `TOOL_RUNS_STORE_URL` (src/platform/settings/tool-run-settings.ts);
 * here only the catch-up rule's window:
 * - `SCHEDULES_CATCH_UP_WINDOW_SECONDS`: after downtime, the missed slots of a schedule are caught up
 *   with one fire when the latest of them is at most this old; older, they are skipped and the
 *   schedule waits for its next regular slot. 0 never catches up (default one day).
 */
import { intSetting } from "./store-url";

export interface ScheduleSettings {
  /** `SCHEDULES_CATCH_UP_WINDOW_SECONDS` (default 86400; 0 = never catch up). */
  catchUpWindowSeconds: number;
}

export const SCHEDULES_DEFAULTS = { catchUpWindowSeconds: 86_400 } as const;

export function parseScheduleSettings(env: Record<string, unknown>, errors: string[]): ScheduleSettings {
  return {
    catchUpWindowSeconds: intSetting(env, "SCHEDULES_CATCH_UP_WINDOW_SECONDS", SCHEDULES_DEFAULTS.catchUpWindowSeconds, 0, 2_592_000, errors),
  };
}
