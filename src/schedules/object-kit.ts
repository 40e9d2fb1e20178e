/**
 * What the Schedule object's parts share: its storage, the env, the injected clock, the alarm
 * (the next slot, or sooner when a fire's run is still owed) and the submit of owed runs. The parts
 * (src/schedules/verbs.ts, src/schedules/alarm.ts) are composed over one kit by
 * src/schedules/compose.ts.
 */
import type { Env } from "../platform/env";
import type { Clock } from "../platform/clock";
import { submitToolRun } from "../tool-runs/submit";
import { markSubmitted, readSchedule, unsubmittedFires } from "./schedule-store";

/** A fire whose run could not be submitted (D1 or the run's object unreachable) is retried this much later. */
export const RETRY_MS = 5_000;

export interface ScheduleDeps {
  storage: DurableObjectStorage;
  /** The object's env, read through a function so it follows the object's. */
  env: () => Env;
  clock: Clock;
}

export interface ScheduleKit extends ScheduleDeps {
  sql: SqlStorage;
  /** Arms the one alarm for the next slot, or sooner when a fire's run is still to be submitted. */
  arm(next: number | null, retrySoon?: boolean): Promise<void>;
  /** Submits every recorded fire whose run was not submitted yet; answers whether any is left. */
  submitPending(): Promise<boolean>;
}

export function scheduleKit(deps: ScheduleDeps): ScheduleKit {
  const { storage, clock } = deps;
  const sql = storage.sql;
  return {
    ...deps,
    sql,
    async arm(next, retrySoon = false) {
      const at = retrySoon ? Math.min(next ?? Number.POSITIVE_INFINITY, clock.now() + RETRY_MS) : next;
      if (at === null || !Number.isFinite(at)) await storage.deleteAlarm();
      else await storage.setAlarm(at);
    },
    async submitPending() {
      for (const f of unsubmittedFires(sql)) {
        const s = readSchedule(sql);
        if (!s) return false;
        try {
          await submitToolRun(deps.env(), {
            run_id: f.run_id,
            tool_name: s.tool_name,
            arguments: s.tool_kwargs,
            caller: { user_id: s.execution_key, fingerprint: s.execution_key_fingerprint },
            origin: "schedule",
            schedule_name: s.name,
            slot_at: f.slot_at,
            state_binding: s.state_binding,
            binding_by: s.created_by,
          });
        } catch (err) {
          console.error(`schedule: submitting a fire's run failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
          return true;
        }
        // Removed while the submit awaited: its tables are gone with it.
        if (readSchedule(sql)) markSubmitted(sql, f.seq);
      }
      return false;
    },
  };
}
