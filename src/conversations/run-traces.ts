/**
 * Finding and showing one run's trace: `GET /api/observability/runs/{trace_id}/trace`
 * and its export. The summary row says where the trace lives (its thread object or its shard). A
 * run too fresh for the index (the shards write it about a second after the run) is looked up at
 * its home directly, for FRESH_LOOKUP_MS: a turn through the message directory, any other run on
 * its shard. Error text is admin-only: other callers get the trace with every `error` null.
 */
import { heldBy } from "../access-control/identity";
import type { RunTrace } from "../shared/run-trace";
import { ledgerShard, messageKey, runShard } from "../shards/rpc";
import { threadStub } from "./model/thread-rpc";
import type { Env } from "../platform/env";
import { findRunRow } from "../observability/runs/query";

/** How long after it started a run not yet in the index is looked up at its home. */
export const FRESH_LOOKUP_MS = 60_000;

/** The trace `traceId` wherever it lives (null: unknown, expired, erased or pruned). */
export async function findTrace(env: Env, traceId: string, nowMs: number): Promise<RunTrace | null> {
  const row = await findRunRow(env.DB, traceId);
  if (row) {
    if (row.home === "shard") return runShard(env, traceId).readTrace(traceId, nowMs);
    return row.thread_id ? threadStub(env, row.thread_id).runTrace(traceId) : null;
  }
  // Not in the index (yet): its shard, or for a turn its thread by the message directory.
  const kept = await runShard(env, traceId).readTrace(traceId, nowMs);
  const fresh = (t: RunTrace | null) => (t && nowMs - Date.parse(t.started_at) <= FRESH_LOOKUP_MS ? t : null);
  if (kept) return fresh(kept);
  const entry = await ledgerShard(env, messageKey(traceId)).find(messageKey(traceId), nowMs);
  if (!entry) return null;
  return fresh(await threadStub(env, entry.thread_id).runTrace(traceId));
}

/**
 * May this caller read `trace`? A restricted caller only its own: by calling principal, started
 * since the caller's key lineage began (`since`, src/access-control/identity.ts). Pure.
 */
export function mayRead(trace: Pick<RunTrace, "principal" | "started_at">, caller: { restricted: boolean; user_id: string; since: string }): boolean {
  return !caller.restricted || heldBy(caller, trace.principal, trace.started_at);
}

/** The trace as `admin` or any other caller sees it: error detail is for admins only. Pure. */
export function traceFor(trace: RunTrace, admin: boolean): RunTrace {
  if (admin) return trace;
  return { ...trace, error: null, steps: trace.steps.map((s) => ({ ...s, error: null })) };
}

/** A safe file name for the trace export: the id with anything but `[A-Za-z0-9._-]` replaced. Pure. */
export function traceFileName(traceId: string): string {
  return `trace-${traceId.replace(/[^A-Za-z0-9._-]/g, "_")}.json`;
}
