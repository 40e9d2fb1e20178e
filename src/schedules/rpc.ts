/**
 * The Schedule objects' RPC contract (docs/schedules.md). One object per schedule name
 * (`idFromName(name)`) holds the spec, the bound execution key's fingerprint, the next slot as its
 * one alarm, and its recent fires. Each fire submits a background tool run (a ToolRun object) that
 * runs as the bound key, re-checked live when it starts. D1 holds only the listing mirror.
 */
import type { Env } from "../platform/env";
import type { ScheduleSpec, ScheduleState } from "./record";

export type { ScheduleSpec, ScheduleState };

export interface ScheduleRpc {
  /**
   * Creates or replaces the schedule (same name: updated in place, counters and fires kept), arms
   * the alarm for the first slot after now and mirrors the listing row. `created` is false on a replace.
   */
  put(spec: ScheduleSpec): Promise<{ created: boolean; state: ScheduleState }>;
  /** The schedule, or null when this object holds none. */
  read(): Promise<ScheduleState | null>;
  /** Deletes the schedule and its alarm (no fire after this); answers whether there was one. */
  remove(): Promise<boolean>;
}

export function scheduleStub(env: Env, name: string): ScheduleRpc {
  return env.SCHEDULES.get(env.SCHEDULES.idFromName(name));
}
