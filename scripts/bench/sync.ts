/**
 * Sync turn: message-door turns with `wait_seconds: 30` on an api route to the built-in echo tool,
 * `callers` concurrent callers, each on its own thread. Every turn must answer 200 `answered` with the echoed text.
 */
import { echoRoute, postMessage } from "./doors";
import { type Ctx, type Phase, closedLoop } from "./lib";

export const SYNC_ROUTE = "bench-echo";

export async function setupSync(ctx: Ctx): Promise<void> {
  await echoRoute(ctx, SYNC_ROUTE);
}

export function syncPhase(ctx: Ctx, runId: string, callers: number, perCaller: number, maxSeconds: number, label = "sync turn"): Promise<Phase> {
  return closedLoop(`${label} (${callers} callers, ${callers} threads)`, callers, perCaller, maxSeconds, async (c, i) => {
    const text = `bench ${c}/${i}`;
    // One thread per caller; the run id keeps warm-up threads apart.
    const r = await postMessage(ctx, SYNC_ROUTE, { external_user_id: `${runId}-caller-${c}`, text, wait_seconds: 30 });
    if (r.status !== 200) return `HTTP ${r.status}`;
    if (r.data?.status !== "answered") return `status ${r.data?.status ?? "?"}`;
    if (r.data.answer !== text) return "wrong answer";
    return null;
  });
}
