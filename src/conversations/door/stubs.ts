/**
 * Where the doors reach the Durable Objects. The contracts are declared in the areas (src/<area>/rpc.ts); this
 * module re-exports the thread's and adds the rate-token helper every door uses.
 */
import { addressBucketStub } from "./bucket-rpc";
import type { Env } from "../../platform/env";
import type { BucketVerdict } from "./token-bucket";

export { type AcceptRequest, type AcceptResult, type SearchScan, type ThreadRpc, type TranscriptPage, threadStub } from "../model/thread-rpc";
export type { AddressBucketRpc as BucketRpc } from "./bucket-rpc";

/** Takes one token from the rate bucket `key` (one AddressBucket object per key). */
export function takeToken(env: Env, settings: { addressBucketMaxEntries: number }, key: string, capacity: number): Promise<BucketVerdict> {
  return addressBucketStub(env, key).take(capacity, key, settings.addressBucketMaxEntries);
}
