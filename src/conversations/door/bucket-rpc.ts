/**
 * The rate-bucket objects' RPC contracts, declared once: `AddressBucket` and `BucketDirectory`
 * implement them and callers reach the objects through the stubs below. Every value these verbs
 * carry is plainly serializable, so the generated namespaces type the stubs without help.
 */
import type { BucketVerdict } from "./token-bucket";
import type { Env } from "../../platform/env";

/** One rate bucket (one object per bucket key). */
export interface AddressBucketRpc {
  /** Takes one token from the bucket `key` of `capacity` turns per hour; a new bucket registers with the directory. */
  take(capacity: number, key: string, maxEntries: number): Promise<BucketVerdict>;
  /** Evicted by the directory: start again from a full bucket. */
  forget(): Promise<void>;
}

/** The deployment's one list of live buckets, bounded by `address_bucket_max_entries`. */
export interface BucketDirectoryRpc {
  /** Records a new bucket; answers the keys evicted to stay within `maxEntries`, oldest first. */
  register(key: string, maxEntries: number): Promise<string[]>;
  /** A bucket that refilled and forgot itself leaves the directory. */
  unregister(key: string): Promise<void>;
  /** How many buckets are live (for tests and operators). */
  size(): Promise<number>;
}

/** The bucket object for rate-bucket `key`. */
export function addressBucketStub(env: Env, key: string): AddressBucketRpc {
  return env.ADDRESS_BUCKETS.get(env.ADDRESS_BUCKETS.idFromName(key));
}

/** The one directory object. */
export function bucketDirectoryStub(env: Env): BucketDirectoryRpc {
  return env.BUCKET_DIRECTORY.get(env.BUCKET_DIRECTORY.idFromName("all"));
}
