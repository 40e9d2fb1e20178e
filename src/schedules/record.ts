/**
 * A schedule's shapes (issue 16; docs/schedules.md), one definition each: the spec its object keeps,
 * the fires it remembers, and the view the doors answer.
 */
import { z } from "zod";
import { JsonObject } from "../http/bounded-json";

/** What a Schedule object is told to keep (times epoch ms). */
export interface ScheduleSpec {
  name: string;
  tool_name: string;
  tool_kwargs: JsonObject;
  /** `schedule_kwargs` as given (shown back). */
  schedule_kwargs: JsonObject;
  /** The normal five-field expression and its canonical timezone. */
  cron: string;
  timezone: string;
  execution_key: string;
  execution_key_fingerprint: string;
  /** The user_id of the key that created (or last re-added) it. */
  created_by: string;
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

/** The spec as the object holds it, with its clock. */
export interface ScheduleState extends ScheduleSpec {
  created_at: number;
  updated_at: number;
  /** The slot the alarm is armed for (null: the expression has no later slot). */
  next_fire_at: number | null;
  fires: number;
  last_fire_at: number | null;
  last_run_id: string | null;
  recent_fires: ScheduleFire[];
}

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

export const ScheduleView = z
  .object({
    name: z.string(),
    tool_name: z.string(),
    tool_kwargs: JsonObject,
    schedule_kwargs: JsonObject,
    cron: z.string(),
    timezone: z.string(),
    execution_key: z.string(),
    execution_key_fingerprint: z.string(),
    created_by: z.string(),
    created_at: iso,
    updated_at: iso,
    next_fire_at: iso.nullable(),
    fires: z.number().int(),
    last_fire_at: iso.nullable(),
    last_run_id: z.string().nullable(),
    /** The newest fires first (at most 20; the listing leaves them out). */
    recent_fires: z.array(ScheduleFireView).optional(),
  })
  .strict();
export type ScheduleView = z.infer<typeof ScheduleView>;

const isoOf = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function scheduleView(s: ScheduleState): ScheduleView {
  return {
    name: s.name,
    tool_name: s.tool_name,
    tool_kwargs: s.tool_kwargs,
    schedule_kwargs: s.schedule_kwargs,
    cron: s.cron,
    timezone: s.timezone,
    execution_key: s.execution_key,
    execution_key_fingerprint: s.execution_key_fingerprint,
    created_by: s.created_by,
    created_at: new Date(s.created_at).toISOString(),
    updated_at: new Date(s.updated_at).toISOString(),
    next_fire_at: isoOf(s.next_fire_at),
    fires: s.fires,
    last_fire_at: isoOf(s.last_fire_at),
    last_run_id: s.last_run_id,
    recent_fires: s.recent_fires.map((f) => ({ run_id: f.run_id, slot_at: isoOf(f.slot_at), fired_at: new Date(f.fired_at).toISOString(), catch_up: f.catch_up, skipped_slots: f.skipped })),
  };
}
