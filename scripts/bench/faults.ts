/**
 * Fault recovery, with the delivery backoff scaled down to seconds
 * (FAULT_VARS, set by bench.ts for the run when this phase is selected). A fixed number of async
 * messages goes, open loop, to an api route whose callback is the scripted HTTPS receiver:
 *
 *   0 s … FAULTY_SECONDS   the receiver fails 30 % of callbacks (3 of every 10 arrivals, in turn a
 *                          503, a connection reset, and a hang past the bridge's callback timeout
 *                          that then drops the connection, so a timed-out attempt never gets a 2xx);
 *   then DOWN_SECONDS      it is fully down (listener closed: connections refused);
 *   then                   it recovers and answers 2xx to everything.
 *
 * Checks, at the receiver: every message gets a 2xx callback; no message_id gets two 2xx; the
 * drain time (recovery → the last message's first 2xx) is at most 1.2 × the next backoff step,
 * i.e. the delay a record that failed from the start of the outage is waiting out at recovery.
 */
import { performance } from "node:perf_hooks";
import { type Ctx, type Phase, waitFor } from "./lib";
import { sendAsync } from "./hol";
import type { Action, ScriptedReceiver } from "./scripted-receiver";

export const FAULT_BACKOFF_BASE_SECONDS = 1;
export const FAULT_BACKOFF_MAX_SECONDS = 4;
export const FAULT_MAX_ATTEMPTS = 20;
export const FAULT_CALLBACK_TIMEOUT_SECONDS = 1;
export const FAULT_VARS: Record<string, string> = {
  CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS: String(FAULT_BACKOFF_BASE_SECONDS),
  CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS: String(FAULT_BACKOFF_MAX_SECONDS),
  CONVERSATIONS_DELIVERY_MAX_ATTEMPTS: String(FAULT_MAX_ATTEMPTS),
  CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS: String(FAULT_CALLBACK_TIMEOUT_SECONDS),
};
/** The receiver's hang: well past the 1 s callback timeout. */
export const FAULT_HANG_MS = 2_500;
export const FAULT_MESSAGES = 80;
export const FAULT_THREADS = 40;
export const FAULT_RATE = 10; // messages/s → 8 s of sending
export const FAULTY_SECONDS = 6;
export const DOWN_SECONDS = 10;
const DRAIN_WAIT_SECONDS = 20;
const DUPLICATE_WATCH_MS = 2_000;

const backoff = (attempt: number) => Math.min(FAULT_BACKOFF_BASE_SECONDS * 2 ** (attempt - 1), FAULT_BACKOFF_MAX_SECONDS);

/** The delay a record whose first attempt failed as the outage began is waiting out when the receiver recovers. */
export function nextBackoffStep(downSeconds = DOWN_SECONDS): number {
  let t = 0;
  let attempt = 1;
  while (t + backoff(attempt) <= downSeconds) t += backoff(attempt++);
  return backoff(attempt);
}

export interface FaultResult {
  phase: Phase;
  sent: number;
  delivered: number;
  duplicates2xx: number;
  injected: Record<Action, number>;
  drainSeconds: number | null;
  nextStepSeconds: number;
  pendingAtRecovery: number;
  pass: boolean;
}

export async function faultsPhase(ctx: Ctx, rx: ScriptedReceiver, route: string): Promise<FaultResult> {
  const firstArrival = rx.arrivals.length;
  const sentAt = new Map<string, number>();
  const failures: Record<string, number> = {};
  const fail = (r: string) => (failures[r] = (failures[r] ?? 0) + 1);
  let k = 0;
  let f = 0;
  const faulty: Action[] = ["503", "reset", "hang"];
  rx.decide = () => {
    const i = k++ % 10;
    return i === 1 || i === 4 || i === 7 ? faulty[f++ % 3] : "ok";
  };
  const start = performance.now();
  // Open loop, fixed count; the receiver's script runs on its own clock.
  const sends = Array.from({ length: FAULT_MESSAGES }, async (_, i) => {
    await new Promise((r) => setTimeout(r, (i * 1000) / FAULT_RATE));
    const t = performance.now();
    const res = await sendAsync(ctx, route, `faults-${i % FAULT_THREADS}`, `faults message ${i}`);
    if ("error" in res) fail(res.error);
    else sentAt.set(res.id, t);
  });
  await new Promise((r) => setTimeout(r, FAULTY_SECONDS * 1000));
  await rx.down();
  await new Promise((r) => setTimeout(r, DOWN_SECONDS * 1000));
  rx.decide = () => "ok";
  await rx.up();
  const recoveredAt = performance.now();
  await Promise.all(sends);
  const ours = () => rx.arrivals.slice(firstArrival).filter((a) => sentAt.has(a.messageId));
  const ok2xx = () =>
    new Set(
      ours()
        .filter((a) => a.action === "ok")
        .map((a) => a.messageId),
    );
  const pendingAtRecovery =
    sentAt.size -
    new Set(
      ours()
        .filter((a) => a.action === "ok" && a.at < recoveredAt)
        .map((a) => a.messageId),
    ).size;
  await waitFor(() => ok2xx().size >= sentAt.size, DRAIN_WAIT_SECONDS * 1000, 20);
  await new Promise((r) => setTimeout(r, DUPLICATE_WATCH_MS)); // a late duplicate would show here
  const arrivals = ours();
  const count2xx = new Map<string, number>();
  const first2xx = new Map<string, number>();
  const injected: Record<Action, number> = { ok: 0, "503": 0, reset: 0, hang: 0 };
  for (const a of arrivals) {
    injected[a.action]++;
    if (a.action !== "ok") continue;
    count2xx.set(a.messageId, (count2xx.get(a.messageId) ?? 0) + 1);
    if (!first2xx.has(a.messageId)) first2xx.set(a.messageId, a.at);
  }
  const duplicates2xx = [...count2xx.values()].filter((n) => n > 1).length;
  const delivered = first2xx.size;
  for (let i = 0; i < sentAt.size - delivered; i++) fail("never delivered");
  const lastDelivery = Math.max(...first2xx.values());
  const drainSeconds = delivered === sentAt.size ? Math.max(0, (lastDelivery - recoveredAt) / 1000) : null;
  const nextStepSeconds = nextBackoffStep();
  // ours() keeps only the messages sent here, so every delivered id has its send time.
  const latencies = [...first2xx.entries()]
    .flatMap(([id, at]) => {
      const sent = sentAt.get(id);
      return sent === undefined ? [] : [at - sent];
    })
    .sort((a, b) => a - b);
  const seconds = (Math.max(lastDelivery, recoveredAt) - start) / 1000;
  const failed = Object.values(failures).reduce((s, n) => s + n, 0);
  const pass = failed === 0 && duplicates2xx === 0 && drainSeconds !== null && drainSeconds <= 1.2 * nextStepSeconds;
  return {
    phase: {
      name: `faults: ${FAULT_MESSAGES} msgs, 30 % failing ${FAULTY_SECONDS} s, down ${DOWN_SECONDS} s`,
      ok: delivered,
      failed,
      seconds,
      perSecond: delivered / seconds,
      latencies,
      failures,
    },
    sent: sentAt.size,
    delivered,
    duplicates2xx,
    injected,
    drainSeconds,
    nextStepSeconds,
    pendingAtRecovery,
    pass,
  };
}
