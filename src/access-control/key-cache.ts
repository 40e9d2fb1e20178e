/**
 * The callers' keys as the doors read them: by the credential's hash, from the isolate cache while
 * the key's access epoch is unchanged (src/platform/epochs), else from D1. Any write that changes
 * what such a read returns (the key, its owner, their roles or custom scopes) bumps the epoch
 * before the writing request answers, so a revoked, disabled or narrowed key is refused on the
 * next request as decisions §2 requires, and a steady caller costs no D1 round trip.
 */
import { EpochCache } from "../platform/epochs/cache";
import type { Env } from "../platform/env";
import { type KeyWithOwner, keyWithOwnerByHash, parseKeyWithOwner } from "./key-store";

type Found = KeyWithOwner & { key_hash: string };

const byHash = new EpochCache<Found>(4096);

/** The key whose SHA-256 (hex) is `hash`, with its owner; null: no such key. */
export function keyByHash(env: Env, hash: string): Promise<Found | null> {
  return byHash.get(env, `key:${hash}`, async () => parseKeyWithOwner(await keyWithOwnerByHash(env.DB, hash).first()));
}
