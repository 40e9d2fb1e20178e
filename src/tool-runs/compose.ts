/**
 * Composes the ToolRun object's parts over one kit (src/tool-runs/object-kit.ts): the verbs of its
 * contract (src/tool-runs/verbs.ts) and its one alarm (src/tool-runs/alarm.ts).
 */
import { type ToolRunAlarm, toolRunAlarm } from "./alarm";
import { type ToolRunDeps, type ToolRunKit, toolRunKit } from "./object-kit";
import { type ToolRunVerbs, toolRunVerbs } from "./verbs";

export interface ToolRunParts {
  verbs: ToolRunVerbs;
  alarm: ToolRunAlarm;
  /** The in-flight lease the alarm consults (tests hold it to stand for an attempt of this instance). */
  lease: ToolRunKit["lease"];
}

export function composeToolRun(deps: ToolRunDeps): ToolRunParts {
  const kit = toolRunKit(deps);
  return { verbs: toolRunVerbs(kit), alarm: toolRunAlarm(kit), lease: kit.lease };
}
