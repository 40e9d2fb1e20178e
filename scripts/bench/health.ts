/** `GET /api/health`: the floor cost of one request through the Worker, the denominator of every ratio. */
import { healthOnce } from "./doors";
import { type Phase, closedLoop } from "./lib";

export function healthPhase(base: string, label: string, callers: number, perCaller: number, maxSeconds: number): Promise<Phase> {
  return closedLoop(`health ${label}`, callers, perCaller, maxSeconds, () => healthOnce(base));
}
