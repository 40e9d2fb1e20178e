/**
 * Head-of-line isolation. An HTTP tool answers after a fixed 200 ms; an
 * api route runs it and calls back to the scripted HTTPS receiver. (a) one thread, its messages
 * sent back to back (each 202 awaited, so all are queued on the thread): turns/s from the first
 * send to the last callback. (b) 64 threads, three messages queued per thread (sent in order per
 * thread, threads concurrently): turns/s the same way. ratio = (b) ÷ (64 × (a)), target ≥ 0.8.
 * FIFO: each message's text carries its per-thread sequence number; the receiver records the order
 * the callbacks arrive per thread_id, message ids map back to sequence numbers, and any callback
 * arriving after one with a higher sequence number of the same thread is a violation (target 0).
 * Turns in flight are bounded per isolate by CONVERSATIONS_MAX_CONCURRENT_TURNS (default 10);
 * bench.ts sets it to HOL_MAX_CONCURRENT_TURNS for the run when this phase is selected.
 */
import { performance } from "node:perf_hooks";
import { http } from "./harness";
import { type Ctx, type Phase, waitFor, cpuMark, cpuSince } from "./lib";
import type { ScriptedReceiver } from "./scripted-receiver";

export const HOL_TOOL_DELAY_MS = 200;
export const HOL_THREADS = 64;
export const HOL_PER_THREAD = 3;
export const HOL_SINGLE_MESSAGES = 10;
export const HOL_MAX_CONCURRENT_TURNS = 64;
const SEND_TIMEOUT_MS = 30_000;

/** Declares an HTTP tool, an execution key that may run only it, and an api route with a callback to `callbackUrl`. */
export async function setupToolRoute(ctx: Ctx, route: string, tool: string, toolUrl: string, delayMs: number, callbackUrl: string): Promise<void> {
  const declared = await http(ctx.base, "POST", "/api/tools-config/entries", {
    key: ctx.admin,
    body: {
      title: tool,
      kind: "http",
      description: `answers after ${delayMs} ms (bench)`,
      url: toolUrl,
      input_schema: { type: "object", properties: { message: { type: ["string", "null"] } } },
      timeout_seconds: 10,
    },
  });
  if (declared.status >= 300) throw new Error(`declaring ${tool} failed: HTTP ${declared.status} ${JSON.stringify(declared.body)}`);
  const execUser = `${tool}-exec`;
  const exec = await http(ctx.base, "POST", "/api/auth/api-keys", {
    key: ctx.admin,
    body: { user_id: execUser, description: `${route} execution key`, scopes: [`tool:${tool}`] },
  });
  if (exec.status !== 200) throw new Error(`minting the ${tool} execution key failed: HTTP ${exec.status} ${JSON.stringify(exec.body)}`);
  const created = await http(ctx.base, "POST", `/api/conversations/${route}`, {
    key: ctx.admin,
    body: { door: "api", target_kind: "tool", target_name: tool, execution_key: execUser, callback_url: callbackUrl, turns_per_hour_override: 100_000_000 },
  });
  if (created.status !== 200) throw new Error(`creating route ${route} failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);
}

/** Sends one async message; resolves its message id or a failure reason. */
export async function sendAsync(ctx: Ctx, route: string, user: string, text: string): Promise<{ id: string } | { error: string }> {
  try {
    const res = await fetch(`${ctx.base}/api/conversations/${route}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ctx.caller },
      body: JSON.stringify({ external_user_id: user, text }),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
    const json = (await res.json().catch(() => null)) as { data?: { message_id?: string } } | null;
    if (res.status !== 202) return { error: `HTTP ${res.status}` };
    const id = json?.data?.message_id;
    return id ? { id } : { error: "no message_id" };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

export interface HolRun {
  phase: Phase;
  fifoViolations: number;
  /** Seconds from the first send to the last 202 (how long queueing took). */
  sendSeconds: number;
  /** For the first thread with a violation: its callbacks in arrival order (seq from the id, seq in the answer, ms after start). */
  violationSample: string | null;
}

/**
 * One run: `threads` threads with `perThread` messages each, sent in order per thread (threads
 * concurrently), then waits (bounded) for every callback. Latency per turn: send → first 2xx callback.
 */
export async function holRun(
  ctx: Ctx,
  rx: ScriptedReceiver,
  route: string,
  name: string,
  runId: string,
  threads: number,
  perThread: number,
  maxWaitSeconds: number,
): Promise<HolRun> {
  const seqOf = new Map<string, { thread: number; seq: number; sentAt: number }>();
  const failures: Record<string, number> = {};
  const fail = (r: string) => (failures[r] = (failures[r] ?? 0) + 1);
  const firstArrival = rx.arrivals.length;
  const mark = cpuMark();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: threads }, async (_, t) => {
      for (let seq = 0; seq < perThread; seq++) {
        const sentAt = performance.now();
        const r = await sendAsync(ctx, route, `${runId}-${t}`, `hol ${runId} thread ${t} seq ${seq}`);
        if ("error" in r) fail(r.error);
        else seqOf.set(r.id, { thread: t, seq, sentAt });
      }
    }),
  );
  const sendSeconds = (performance.now() - start) / 1000;
  const ours = () => rx.arrivals.slice(firstArrival).filter((a) => a.action === "ok" && seqOf.has(a.messageId));
  const okIds = () => new Set(ours().map((a) => a.messageId));
  await waitFor(() => okIds().size >= seqOf.size, maxWaitSeconds * 1000, 20);
  const arrivals = ours();
  const delivered = new Set<string>();
  const latencies: number[] = [];
  let last = start;
  // FIFO per thread, in the order the receiver saw the callbacks (first 2xx per message).
  const maxSeq = new Map<string, number>();
  let fifoViolations = 0;
  let violationSample: string | null = null;
  for (const a of arrivals) {
    if (delivered.has(a.messageId)) continue;
    delivered.add(a.messageId);
    const m = seqOf.get(a.messageId);
    if (!m) continue; // ours() keeps only the messages sent here
    latencies.push(a.at - m.sentAt);
    last = Math.max(last, a.at);
    const prev = maxSeq.get(a.threadId) ?? -1;
    if (m.seq < prev) {
      fifoViolations++;
      if (!violationSample) {
        const seqInAnswer = (body: string) => /seq (\d+)/.exec(body)?.[1] ?? "?";
        violationSample = `thread ${a.threadId}: ${arrivals
          .filter((x) => x.threadId === a.threadId)
          .map((x) => {
            const sent = seqOf.get(x.messageId);
            const at = `at ${(x.at - start).toFixed(0)} ms`;
            return sent
              ? `seq ${sent.seq} (answer says ${seqInAnswer(x.body)}, ${x.action}) ${at}, 202 at ${(sent.sentAt - start).toFixed(0)} ms`
              : `an unknown message ${at}`;
          })
          .join("; ")}`;
      }
    } else maxSeq.set(a.threadId, m.seq);
  }
  const missing = seqOf.size - delivered.size;
  for (let i = 0; i < missing; i++) fail(`no callback within ${maxWaitSeconds} s`);
  const seconds = (last - start) / 1000;
  latencies.sort((x, y) => x - y);
  const failed = Object.values(failures).reduce((s, n) => s + n, 0);
  return {
    phase: { name, ok: delivered.size, failed, seconds, perSecond: delivered.size / seconds, latencies, failures, cpu: cpuSince(mark) },
    fifoViolations,
    sendSeconds,
    violationSample,
  };
}

export interface HolResult {
  single: HolRun;
  many: HolRun;
  ratio: number;
}

export async function holPhase(ctx: Ctx, rx: ScriptedReceiver, route: string): Promise<HolResult> {
  // Warm-up: a few threads, so the tool, the route and the object classes are hot.
  await holRun(ctx, rx, route, "warm", "hol-warm", 8, 2, 15);
  const single = await holRun(
    ctx,
    rx,
    route,
    `hol (a): 1 thread × ${HOL_SINGLE_MESSAGES} back to back (${HOL_TOOL_DELAY_MS} ms tool)`,
    "hol-one",
    1,
    HOL_SINGLE_MESSAGES,
    15,
  );
  const many = await holRun(
    ctx,
    rx,
    route,
    `hol (b): ${HOL_THREADS} threads × ${HOL_PER_THREAD} queued (${HOL_TOOL_DELAY_MS} ms tool)`,
    "hol-many",
    HOL_THREADS,
    HOL_PER_THREAD,
    20,
  );
  return { single, many, ratio: many.phase.perSecond / (HOL_THREADS * single.phase.perSecond) };
}
