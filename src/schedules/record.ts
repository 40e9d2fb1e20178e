/**
 * A schedule's shapes (docs/schedules.md), one definition each: the spec (the fields a
 * creation chooses, with the bound key) and its clock and counters, from which the object's SQLite
 * row, the D1 listing row and the view the doors answer are all derived (they differ only in how
 * times are written: epoch ms in the object, ISO-8601 text in D1 and the view), and the fires the
 * object remembers.
 */
import { z } from "zod";
import { JsonObject } from "../platform/http/bounded-json";
import { StateBinding } from "../shared/state-binding";
import { jsonColumn } from "../platform/persistence/stored-json";

/** What a Schedule object is told to keep. */
export const ScheduleSpec = z.object({
  name: z.string(),
  tool_name: z.string(),
  tool_kwargs: JsonObject,
  /** `schedule_kwargs` as given (shown back). */
  schedule_kwargs: JsonObject,
  /** The normal five-field expression and its canonical timezone. */
  cron: z.string(),
  timezone: z.string(),
  execution_key: z.string(),
  execution_key_fingerprint: z.string(),
  /** The user_id of the key that created (or last re-added) it. */
  created_by: z.string(),
  /** States each fire's run reads and writes (spec §2.6), or null. */
  state_binding: StateBinding.nullable(),
});
export type ScheduleSpec = z.infer<typeof ScheduleSpec>;

/**
 * The spec's stored column values in table order (name … state_binding), shared by the object's
 * own spec row and the D1 listing mirror, which store the spec alike.
 */
export function specColumnValues(s: ScheduleSpec): (string | null)[] {
  return [
    s.name,
    s.tool_name,
    JSON.stringify(s.tool_kwargs),
    JSON.stringify(s.schedule_kwargs),
    s.cron,
    s.timezone,
    s.execution_key,
    s.execution_key_fingerprint,
    s.created_by,
    s.state_binding === null ? null : JSON.stringify(s.state_binding),
  ];
}

/** The spec with its clock and counters, times written as `time`. */
function withClock<T extends z.ZodType>(time: T) {
  return ScheduleSpec.extend({
    created_at: time,
    updated_at: time,
    /** The slot the alarm is armed for (null: the expression has no later slot). */
    next_fire_at: time.nullable(),
    fires: z.number().int(),
    last_fire_at: time.nullable(),
    last_run_id: z.string().nullable(),
  });
}

/**
 * A stored row of the spec with its clock (the object's `spec` table with times as `time` = epoch
 * ms, or the D1 listing with ISO text): JSON fields are text columns, numbers may come back as text.
 */
export function storedScheduleRow<T extends z.ZodType>(time: T) {
  return withClock(time).extend({
    tool_kwargs: jsonColumn(JsonObject),
    schedule_kwargs: jsonColumn(JsonObject),
    state_binding: jsonColumn(StateBinding).nullable(),
    fires: z.coerce.number().int(),
  });
}

/** One alarm that found due slots: a fire (with its run) or only skipped slots. */
export interface ScheduleFire {
  /** The tool run the fire started (null when the alarm only skipped slots). */
  run_id: string | null;
  slot_at: number | null;
  fired_at: number;
  catch_up: boolean;
  /** Due slots the alarm did not fire (the catch-up rule). */
  skipped: number;
}

const ScheduleClock = withClock(z.number().int());

/** The spec as the object holds it, with its clock (epoch ms) and recent fires. */
export type ScheduleState = z.infer<typeof ScheduleClock> & { recent_fires: ScheduleFire[] };

const iso = z.string().describe("ISO-8601 UTC");

export const ScheduleFireView = z
  .object({
    run_id: z.string().nullable(),
    slot_at: iso.nullable(),
    fired_at: iso,
    catch_up: z.boolean(),
    skipped_slots: z.number().int(),
  })
  .strict();
export type ScheduleFireView = z.infer<typeof ScheduleFireView>;

export const ScheduleView = withClock(iso)
  .extend({
    /** The newest fires first (at most 20; the listing leaves them out). */
    recent_fires: z.array(ScheduleFireView).optional(),
  })
  .strict();
export type ScheduleView = z.infer<typeof ScheduleView>;

const isoOf = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The object's state as the doors show it: the same fields, times as ISO-8601. */
export function scheduleView(s: ScheduleState): ScheduleView {
  const { created_at, updated_at, next_fire_at, last_fire_at, recent_fires, ...rest } = s;
  return {
    ...rest,
    created_at: new Date(created_at).toISOString(),
    updated_at: new Date(updated_at).toISOString(),
    next_fire_at: isoOf(next_fire_at),
    last_fire_at: isoOf(last_fire_at),
    recent_fires: recent_fires.map((f) => ({
      run_id: f.run_id,
      slot_at: isoOf(f.slot_at),
      fired_at: new Date(f.fired_at).toISOString(),
      catch_up: f.catch_up,
      skipped_slots: f.skipped,
    })),
  };
}
