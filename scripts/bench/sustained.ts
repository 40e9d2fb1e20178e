/**
 * Sustained load: the heap after forced GC over time. A bridge of its own runs under
 * `npm start -- --inspect` (the DevTools protocol is how the heap is read and collected); an api
 * route runs the built-in echo tool and answers each message with a signed HTTPS callback to the
 * scripted receiver, which fails a share of callbacks with a 503 (SUSTAINED_FAILURE_RATE, retried
 * with the delivery backoff scaled to seconds, SUSTAINED_VARS). `messages` async messages go to `threads` hot threads from
 * `callers` concurrent callers, with at most `window` messages sent but not yet called back with
 * a 2xx. Every `every` messages the senders pause, the backlog drains (bounded), and the phase
 * records the heap after two forced collections, the heap before them, and workerd's RSS.
 *
 * After `warmup` messages and at the end it takes a heap snapshot and prints the constructors that
 * grew between the two, and the retained bytes of the objects named after each Durable Object class
 * (in workerd's snapshots these are small wrappers, not the instances' state: see docs/performance.md).
 * Pass: every checkpoint after the warm-up is within 10 % of the first one after it.
 */
import { performance } from "node:perf_hooks";
import { type HeapSummary, type Inspector, diff, summarise, workerdRss } from "./heap";
import { type Ctx, type Phase, fmt, waitFor } from "./lib";
import { sendAsync } from "./hol";
import type { ScriptedReceiver } from "./scripted-receiver";

/** Delivery retries in seconds, so the 40 % of failed callbacks drain between checkpoints. */
export const SUSTAINED_VARS: Record<string, string> = {
  CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS: "1",
  CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS: "4",
};
export const SUSTAINED_ROUTE = "bench-sustained";
/**
 * The share of callbacks the receiver answers 503 by default. A thread delivers in order, so each
 * failure holds its thread's later callbacks for the backoff (1 s here): the load tests' 40 % over
 * 200 threads at 0.1 message/s each, on a few hot threads, would make the delivery backoff, not the
 * service, the bound. `--sustained-failures` sets it.
 */
export const SUSTAINED_FAILURE_RATE = 0.1;
/** How far the heap after GC may move after the warm-up. */
export const FLAT_TOLERANCE = 0.1;
const DRAIN_MS = 60_000;

export interface SustainedOptions {
  messages: number;
  threads: number;
  callers: number;
  every: number;
  warmup: number;
  window: number;
  snapshots: boolean;
  /** The share of callbacks answered 503, 0 to 1. */
  failures: number;
}

export interface Checkpoint {
  messages: number;
  seconds: number;
  /** Heap used after two forced collections, bytes. */
  heapAfterGc: number;
  heapTotal: number;
  /** Heap used just before, bytes (garbage V8 had not collected yet included). */
  heapBefore: number;
  rss: number | null;
  /** Messages called back with a 2xx by then; how many callbacks the receiver had answered 503. */
  delivered: number;
  failedCallbacks: number;
}

export interface SustainedResult {
  phase: Phase;
  checkpoints: Checkpoint[];
  /** (max − min) ÷ first of the heap after GC over the checkpoints after the warm-up. */
  spread: number;
  /** The heap after GC stayed within FLAT_TOLERANCE after the warm-up (refused sends are counted apart, as failures). */
  pass: boolean;
  snapshots: Array<{ at: number; summary: HeapSummary }>;
}

/** An api route to the echo tool with its callback at the receiver. */
export async function setupSustained(ctx: Ctx, callbackUrl: string): Promise<void> {
  const res = await fetch(`${ctx.base}/api/conversations/${SUSTAINED_ROUTE}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": ctx.admin },
    body: JSON.stringify({
      door: "api",
      target_kind: "tool",
      target_name: "echo",
      execution_key: ctx.execUser,
      callback_url: callbackUrl,
      turns_per_hour_override: 100_000_000,
    }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`creating route ${SUSTAINED_ROUTE} failed: HTTP ${res.status} ${text}`);
}

export async function sustainedPhase(
  ctx: Ctx,
  inspector: Inspector,
  pgid: number | undefined,
  rx: ScriptedReceiver,
  classes: string[],
  o: SustainedOptions,
  log: (line: string) => void,
): Promise<SustainedResult> {
  const delivered = new Set<string>();
  let failedCallbacks = 0;
  let k = 0;
  rx.decide = (id) => {
    // Spread evenly: callback k fails when the running share of failures is below the target.
    const fail = Math.floor((k + 1) * o.failures) > Math.floor(k * o.failures);
    k++;
    if (fail) failedCallbacks++;
    else delivered.add(id);
    return fail ? "503" : "ok";
  };
  const failures: Record<string, number> = {};
  const latencies: number[] = [];
  const sentIds = new Set<string>();
  const checkpoints: Checkpoint[] = [];
  const snapshots: Array<{ at: number; summary: HeapSummary }> = [];
  const start = performance.now();
  const outstanding = () => sentIds.size - delivered.size;

  const checkpoint = async (messages: number) => {
    await waitFor(() => outstanding() === 0, DRAIN_MS, 50);
    const heapBefore = await inspector.heapNow();
    const gc = await inspector.heapAfterGc(async () => (await fetch(`${ctx.base}/api/health`)).arrayBuffer());
    const c: Checkpoint = {
      messages,
      seconds: (performance.now() - start) / 1000,
      heapAfterGc: gc.used,
      heapTotal: gc.total,
      heapBefore,
      rss: workerdRss(pgid),
      delivered: delivered.size,
      failedCallbacks,
    };
    checkpoints.push(c);
    log(
      `sustained: ${String(messages).padStart(6)} msgs ${fmt(c.seconds, 0).padStart(5)} s  heap after GC ${mb(c.heapAfterGc)} MB (before GC ${mb(c.heapBefore)}, total ${mb(c.heapTotal)})  workerd RSS ${c.rss === null ? "n/a" : mb(c.rss)} MB  delivered ${c.delivered}, 503s ${c.failedCallbacks}`,
    );
    if (o.snapshots && (messages === o.warmup || messages === o.messages)) {
      const t = performance.now();
      const summary = summarise(await inspector.snapshot(), classes);
      snapshots.push({ at: messages, summary });
      log(`sustained: heap snapshot at ${messages} msgs: ${mb(summary.totalBytes)} MB in the snapshot (${fmt((performance.now() - t) / 1000, 1)} s)`);
    }
  };

  await checkpoint(0);
  for (let done = 0; done < o.messages; ) {
    const batch = Math.min(o.every, o.messages - done);
    let next = 0;
    await Promise.all(
      Array.from({ length: o.callers }, async () => {
        for (;;) {
          const i = next++;
          if (i >= batch) return;
          const n = done + i;
          await waitFor(() => outstanding() < o.window, DRAIN_MS, 5);
          const t = performance.now();
          const r = await sendAsync(ctx, SUSTAINED_ROUTE, `sustained-${n % o.threads}`, `sustained ${n}`);
          if ("error" in r) failures[r.error] = (failures[r.error] ?? 0) + 1;
          else {
            sentIds.add(r.id);
            latencies.push(performance.now() - t);
          }
        }
      }),
    );
    done += batch;
    await checkpoint(done);
  }
  const seconds = (performance.now() - start) / 1000;
  for (const id of sentIds) if (!delivered.has(id)) failures["not called back with a 2xx"] = (failures["not called back with a 2xx"] ?? 0) + 1;
  const after = checkpoints.filter((c) => c.messages >= o.warmup);
  const heaps = after.map((c) => c.heapAfterGc);
  const spread = heaps.length ? (Math.max(...heaps) - Math.min(...heaps)) / heaps[0] : Number.NaN;
  latencies.sort((a, b) => a - b);
  const failed = Object.values(failures).reduce((s, n) => s + n, 0);
  return {
    phase: {
      name: `sustained: ${o.messages} msgs on ${o.threads} threads, ${Math.round(100 * o.failures)} % callbacks 503`,
      ok: sentIds.size,
      failed,
      seconds,
      perSecond: sentIds.size / seconds,
      latencies,
      failures,
    },
    checkpoints,
    spread,
    pass: Number.isFinite(spread) && spread <= FLAT_TOLERANCE,
    snapshots,
  };
}

/** Prints what the two snapshots show: the constructors that grew, and the objects' retained bytes. */
export function printSnapshots(r: SustainedResult, log: (line: string) => void): void {
  if (r.snapshots.length < 2) return;
  const [a, b] = r.snapshots;
  log(`sustained: constructors that changed most between ${a.at} and ${b.at} msgs (count, self bytes):`);
  for (const row of diff(a.summary, b.summary))
    log(
      `  ${row.name.slice(0, 48).padEnd(48)} ${String(row.count[0]).padStart(8)} → ${String(row.count[1]).padEnd(8)} ${kb(row.bytes[0]).padStart(9)} → ${kb(row.bytes[1])} KB`,
    );
  for (const s of [a, b]) {
    const parts = [...s.summary.objects.entries()].map(
      ([c, list]) => `${c} ×${list.length} (max ${kb(list[0])} KB, sum ${kb(list.reduce((x, y) => x + y, 0))} KB)`,
    );
    log(`sustained: objects at ${s.at} msgs, retained: ${parts.join("; ") || "none alive"}`);
  }
}

const mb = (b: number) => fmt(b / 2 ** 20, 2);
const kb = (b: number) => fmt(b / 1024, 0);
