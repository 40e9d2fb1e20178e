/**
 * Composes the Schedule object's parts over one kit (src/schedules/object-kit.ts): the verbs of its
 * contract (src/schedules/verbs.ts) and its one alarm (src/schedules/alarm.ts).
 */
import { type ScheduleAlarm, scheduleAlarm } from "./alarm";
import { type ScheduleDeps, scheduleKit } from "./object-kit";
import { type ScheduleVerbs, scheduleVerbs } from "./verbs";

export interface ScheduleParts {
  verbs: ScheduleVerbs;
  alarm: ScheduleAlarm;
}

export function composeSchedule(deps: ScheduleDeps): ScheduleParts {
  const kit = scheduleKit(deps);
  return { verbs: scheduleVerbs(kit), alarm: scheduleAlarm(kit) };
}
