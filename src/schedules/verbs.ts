/** The Schedule object's verbs (src/schedules/rpc.ts): store the spec and arm its next slot, read, remove. */
import type { ScheduleSpec, ScheduleState } from "./rpc";
import { compileCron } from "./cron";
import { mirrorStatement } from "./listing";
import type { ScheduleKit } from "./object-kit";
import { readSchedule, writeSpec } from "./schedule-store";

export interface ScheduleVerbs {
  put(spec: ScheduleSpec): Promise<{ created: boolean; state: ScheduleState }>;
  read(): ScheduleState | null;
  remove(): Promise<boolean>;
}

export function scheduleVerbs(kit: ScheduleKit): ScheduleVerbs {
  const { sql, storage, clock } = kit;
  return {
    async put(spec) {
      const slots = compileCron(spec.cron, spec.timezone);
      // The door compiled it already; a spec that does not compile here is a fault, not input.
      if (!slots) throw new Error("schedule: the expression does not compile");
      const now = clock.now();
      const next = slots.nextAfter(now);
      const created = writeSpec(sql, spec, next, now);
      await kit.arm(next);
      const state = readSchedule(sql);
      if (!state) throw new Error("schedule: the spec just stored cannot be read back");
      await mirrorStatement(kit.env().DB, state).run();
      return { created, state };
    },

    read() {
      return readSchedule(sql);
    },

    async remove() {
      const had = readSchedule(sql) !== null;
      await storage.deleteAlarm();
      await storage.deleteAll();
      return had;
    },
  };
}
