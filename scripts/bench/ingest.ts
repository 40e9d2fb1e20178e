/**
 * Ingest: async messages (no `wait_seconds`, answered 202) per second,
 * `callers` concurrent callers spread over `threads` threads (distinct `external_user_id` values;
 * caller c sends its i-th message to thread c + callers × (i mod threads/callers)). Every answer
 * other than 202 with a message id is a failure. After the phase the bench waits (bounded) until
 * the last message of every thread reads as delivered, so the backlog of accepted turns does not
 * run into the next phase.
 */
import { http } from "./harness";
import { echoRoute, postMessage } from "./doors";
import { type Ctx, type Phase, closedLoop, waitFor } from "./lib";

export const INGEST_ROUTE = "bench-ingest";

export interface IngestResult {
  phase: Phase;
  /** Seconds until every thread's last message read as delivered, or null if the bound ran out. */
  drainSeconds: number | null;
}

export async function setupIngest(ctx: Ctx): Promise<void> {
  await echoRoute(ctx, INGEST_ROUTE);
}

export async function ingestPhase(ctx: Ctx, runId: string, callers: number, threads: number, perCaller: number, maxSeconds: number): Promise<IngestResult> {
  const spread = Math.max(1, Math.floor(threads / callers));
  const lastByThread = new Map<string, string>();
  const phase = await closedLoop(`ingest 202 (${callers} callers, ${callers * spread} threads)`, callers, perCaller, maxSeconds, async (c, i) => {
    const thread = `${runId}-t${c + callers * (i % spread)}`;
    const r = await postMessage(ctx, INGEST_ROUTE, { external_user_id: thread, text: `ingest ${c}/${i}` });
    if (r.status !== 202) return `HTTP ${r.status}`;
    if (typeof r.data?.message_id !== "string") return "no message_id";
    lastByThread.set(thread, r.data.message_id);
    return null;
  });
  const t0 = Date.now();
  const open = new Set(lastByThread.values());
  const drained = await waitFor(
    async () => {
      for (const id of [...open]) {
        const r = await http(ctx.base, "GET", `/api/conversations/${INGEST_ROUTE}/messages/${id}`, { key: ctx.admin });
        if (r.status === 200 && r.body?.data?.status === "delivered") open.delete(id);
        else break; // threads settle in roughly the order they were fed; poll again later
      }
      return open.size === 0;
    },
    60_000,
    250,
  );
  return { phase, drainSeconds: drained ? (Date.now() - t0) / 1000 : null };
}
