/**
 * The IndexShard objects' RPC contract: they keep D1 off the per-message path. A fixed set of
 * SHARD_COUNT shards, each one Durable Object, does two jobs:
 *
 * - **Ledger**: small keyed entries with an optional expiry, read and written by the doors and the
 *   thread objects instead of D1. Namespaces: `message` (message_id → its thread, so the
 *   single-record read door finds a record the moment its 202 goes out), `channel:<name>` and
 *   `event:<route>` (inbound dedupe claims), `outbound:<channel>` (a sent chunk's provider id →
 *   its record, for receipts), `person` (person_id → the PersonDirectory that holds the person:
 *   `message_id` is the person id, `thread_id` empty so that forgetting the person thread leaves
 *   it, `route_name` the directory's name), `hook:<topic>` and `hook-link:<token hash prefix>` (hook
 *   delivery-id claims: a replayed delivery fires nothing). An entry lives on the shard its
 *   (namespace, key) hashes to.
 * - **Listing buffer**: thread objects push their listing rows and failed records here; the shard
 *   keeps them durably and writes them to D1 (`threads`, `failed_records`) in one batch per
 *   `index_flush_batch` settled turns pushed, or after `index_flush_lag_seconds`, whichever comes
 *   first.
 *   A thread's pushes go to the shard its thread id hashes to, so they stay in order.
 *
 * The shard count is a constant, not a setting: the ledger's placement depends on it, and
 * changing it would strand every entry.
 */
import { z } from "zod";
import type { Env } from "../platform/env";
import { TargetKind } from "../shared/kinds";
import { RUN_KINDS, RUN_OUTCOMES, RUN_TRIGGERS, type RunTrace } from "../shared/run-trace";

/** How many IndexShard objects the deployment has. */
export const SHARD_COUNT = 16;

/** What a ledger entry says: a message and its thread (route_name set for `message` entries). */
export interface LedgerEntry {
  message_id: string;
  thread_id: string;
  route_name: string | null;
}

/** A ledger key. */
export interface LedgerKey {
  namespace: string;
  key: string;
}

/** One thread's listing row as the admin listing reads it (D1 `threads`). */
export const ListingRow = z.object({
  route_name: z.string(),
  thread_id: z.string(),
  client_address: z.string().nullable(),
  last_activity_at: z.string(),
  message_count: z.number(),
  last_status: z.string(),
  /** When the thread's last record expires, if every record is terminal (null: some record is still live without end). */
  live_until: z.number().nullable(),
  /** Turns queued or running (the thread's FIFO depth, for the metrics; D1 `thread_loads`). */
  queue_depth: z.number().optional(),
  /** Records waiting for delivery (`pending_delivery`): the thread's share of the delivery backlog. */
  pending_deliveries: z.number().optional(),
  /** The thread's inbox state (docs/inbox.md): status, owner, since when a customer waits (epoch ms), labels. */
  inbox_status: z.string().nullable().optional(),
  assignee: z.string().nullable().optional(),
  waiting_since: z.number().nullable().optional(),
  labels: z.array(z.string()).optional(),
  /** How many of the thread's answers their customer rated down (docs/inbox.md, "Answer feedback"). */
  rated_down: z.number().optional(),
});
export type ListingRow = z.infer<typeof ListingRow>;

/**
 * A run's summary row as D1 `runs` holds it: no input, output or error text. `home`
 * says where the full trace lives: `thread` (its thread object, for a turn) or `shard` (the
 * IndexShard its trace id hashes to, `runShard`).
 */
export const RunRow = z.object({
  trace_id: z.string(),
  kind: z.enum(RUN_KINDS),
  trigger: z.enum(RUN_TRIGGERS),
  target_kind: TargetKind,
  target_name: z.string(),
  target_version: z.string().nullable(),
  route_name: z.string().nullable(),
  thread_id: z.string().nullable(),
  interaction_id: z.string().nullable(),
  user_id: z.string().nullable(),
  principal: z.string().nullable(),
  /** Epoch ms. */
  started_at: z.number(),
  duration_ms: z.number(),
  outcome: z.enum(RUN_OUTCOMES),
  step_count: z.number(),
  /** The run carries admin-only error detail (in its trace). */
  has_error: z.boolean(),
  home: z.enum(["thread", "shard"]),
});
export type RunRow = z.infer<typeof RunRow>;

/** An additive metrics counter for one minute (`minute` = epoch ms / 60 000, floored), e.g. `delivery_attempts` per route. */
export const CounterDelta = z.object({ minute: z.number(), name: z.string(), label: z.string(), value: z.number() });
export type CounterDelta = z.infer<typeof CounterDelta>;

/** A failed record as the admin failed listing reads it (D1 `failed_records`). */
export const FailedRow = z.object({
  message_id: z.string(),
  route_name: z.string(),
  thread_id: z.string(),
  failed_at: z.string(),
  expires_at: z.number(),
});
export type FailedRow = z.infer<typeof FailedRow>;

/** One thread's push: its current listing row (or its removal), its new failed records, and how many settled changes it carries. */
export interface ListingPush {
  thread_id: string;
  /** The row to list, or null when every record of the thread is gone. */
  row: ListingRow | null;
  failed: FailedRow[];
  /** Turns settled since the thread's last push (the flush counts these against `index_flush_batch`). */
  updates: number;
  /** Summary rows of runs (turns) settled since the last push, for D1 `runs`. */
  runs?: RunRow[];
  /** Trace ids whose traces the thread pruned with their records: their `runs` rows go. */
  runs_dropped?: string[];
  /** Metrics counters noted since the last push (delivery attempts and failed attempts). */
  counters?: CounterDelta[];
}

/** The verbs of one shard. */
export interface IndexShardRpc {
  /** Writes `entry` under `k` (replacing what was there), expiring at `expiresAtMs` (null: kept until dropped). */
  put(k: LedgerKey, entry: LedgerEntry, expiresAtMs: number | null): Promise<void>;
  /** The live entry under `k`, if any. */
  find(k: LedgerKey, nowMs: number): Promise<LedgerEntry | null>;
  /** Claims `k` for `mine` unless a live entry holds it; answers the entry that holds (dedupe). */
  claim(k: LedgerKey, mine: LedgerEntry, expiresAtMs: number, nowMs: number): Promise<LedgerEntry>;
  /** Releases `k` if `messageId` still holds it (a refused admission must not burn the key). */
  release(k: LedgerKey, messageId: string): Promise<void>;
  /** Drops the entries under `keys` (a thread pruned those records). */
  drop(keys: LedgerKey[]): Promise<void>;
  /** Takes a thread's listing push; durable in the shard when this returns. */
  push(p: ListingPush): Promise<void>;
  /** Writes every buffered row to D1 now; answers how many rows it wrote. */
  flush(): Promise<number>;
  /** Rows buffered and not yet in D1. */
  pending(): Promise<number>;
  /** Thread forget: drops the thread's ledger entries and buffered rows (listing and runs) here, after any flush in progress. */
  forgetThread(threadId: string): Promise<void>;
  /**
   * Keeps the trace of a run outside any thread (src/observability/runs/recorder.ts; on the shard `runShard`
   * names) until `RUNS_TRACE_RETENTION_SECONDS` after it started, and buffers its summary row for D1.
   */
  recordRun(trace: RunTrace): Promise<void>;
  /** A trace this shard keeps (null: unknown or expired). */
  readTrace(traceId: string, nowMs: number): Promise<RunTrace | null>;
  /** Buffers metrics counters for D1 (`run_counters`), written with the next flush. */
  count(deltas: CounterDelta[]): Promise<void>;
  /** Person erase: drops the traces and buffered run rows attributed to `userId`; answers the traces dropped. */
  eraseUserRuns(userId: string): Promise<number>;
  /** `POST /api/runs/prune`: drops traces and buffered run rows of runs started before `beforeMs`; answers the traces dropped. */
  pruneRuns(beforeMs: number): Promise<number>;
}

/** FNV-1a, 32 bits: a stable, well-spread placement hash (not a security boundary). */
export function placementHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The shard number for a placement string. */
export function shardIndex(placement: string): number {
  return placementHash(placement) % SHARD_COUNT;
}

/** The shard object with number `index`. */
export function shardStub(env: Env, index: number): IndexShardRpc {
  return env.INDEX_SHARDS.get(env.INDEX_SHARDS.idFromName(`shard-${index}`));
}

/** The number of the shard that holds ledger key `k`. */
export function ledgerIndex(k: LedgerKey): number {
  return shardIndex(`${k.namespace}\u0000${k.key}`);
}

/** The shard that holds ledger key `k`. */
export function ledgerShard(env: Env, k: LedgerKey): IndexShardRpc {
  return shardStub(env, ledgerIndex(k));
}

/** The shard that buffers thread `threadId`'s listing pushes. */
export function listingShard(env: Env, threadId: string): IndexShardRpc {
  return shardStub(env, shardIndex(`listing\u0000${threadId}`));
}

/** The shard that keeps the trace of run `traceId` (a run outside any thread). */
export function runShard(env: Env, traceId: string): IndexShardRpc {
  return shardStub(env, shardIndex(`run\u0000${traceId}`));
}

/** The shard that buffers metrics counters noted under `label` (a route name: one route's counts stay on one shard). */
export function counterShard(env: Env, label: string): IndexShardRpc {
  return shardStub(env, shardIndex(`counter\u0000${label}`));
}

/** Every shard (thread forget visits them all). */
export function allShards(env: Env): IndexShardRpc[] {
  return Array.from({ length: SHARD_COUNT }, (_, i) => shardStub(env, i));
}

/** The ledger key of message `messageId`'s directory entry. */
export function messageKey(messageId: string): LedgerKey {
  return { namespace: "message", key: messageId };
}

/** The ledger key of a sent chunk's provider id on `channel`. */
export function outboundKey(channel: string, providerMessageId: string): LedgerKey {
  return { namespace: `outbound:${channel}`, key: providerMessageId };
}

/** The ledger key of person `personId`'s directory entry. */
export function personKey(personId: string): LedgerKey {
  return { namespace: "person", key: personId };
}
