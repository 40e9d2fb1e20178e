/**
 * Durable Object stubs with plain method types. The RPC type mapping turns records holding
 * `unknown` (forms, event payloads) into `never`, so the verbs are declared here once instead.
 */
import type { AcceptRequest, AcceptResult, SearchScan, TranscriptPage } from "../../durable-objects/thread-object";
import type { BucketVerdict } from "../../durable-objects/address-bucket";
import type { Env } from "../env";
import type { AnswerRecord } from "./record";

export interface ThreadRpc {
  accept(req: AcceptRequest): Promise<AcceptResult>;
  getRecord(messageId: string): Promise<AnswerRecord | null>;
  transcript(opts: { order: "asc" | "desc"; offset: number; limit: number; q?: string; scanBudget?: number }): Promise<TranscriptPage>;
  search(opts: { q: string; budget: number }): Promise<SearchScan>;
  forget(): Promise<{ ok: true; removed: number } | { ok: false; reason: "turn_in_flight" }>;
  applyReceipt(messageId: string, status: "delivered" | "failed", detail?: string): Promise<boolean>;
  getMode(route: { created_at: string; initial_mode: "agent" | "manual" }): Promise<{ mode: "agent" | "manual"; source: "thread" | "route" }>;
  setMode(threadId: string, route: { created_at: string }, mode: "agent" | "manual"): Promise<void>;
}

export interface BucketRpc {
  take(capacity: number, key: string, maxEntries: number): Promise<BucketVerdict>;
}

export function threadStub(env: Env, threadId: string): ThreadRpc {
  return env.THREADS.get(env.THREADS.idFromName(threadId)) as unknown as ThreadRpc;
}

function bucketStub(env: Env, key: string): BucketRpc {
  return env.ADDRESS_BUCKETS.get(env.ADDRESS_BUCKETS.idFromName(key)) as unknown as BucketRpc;
}

/** Takes one token from the rate bucket `key` (one AddressBucket object per key). */
export function takeToken(env: Env, settings: { addressBucketMaxEntries: number }, key: string, capacity: number): Promise<BucketVerdict> {
  return bucketStub(env, key).take(capacity, key, settings.addressBucketMaxEntries);
}
