/**
 * Inbound dedupe claims (decisions §6, §11): `(namespace, key)` → the message that key admitted,
 * for `inbound_dedupe_ttl_seconds`. Namespaces: `channel:<name>` for provider message ids,
 * `event:<route>` for event ids. The claims live in the IndexShard ledgers
 * (src/shards/rpc.ts), one object call each, so no door writes D1.
 *
 * A claim is written before the thread object's accept with a fresh message_id; a redelivery finds
 * it and re-offers the same message_id, and accept is idempotent on it, so a crash between claim
 * and accept loses nothing and no inbound runs twice. A refused admission releases its claim.
 */
import { type LedgerEntry, ledgerShard } from "../../shards/rpc";
import type { Env } from "../../platform/env";

/** What a claim holds: the message the key admitted and its thread. */
export type DedupeClaim = Pick<LedgerEntry, "message_id" | "thread_id">;

const entry = (c: DedupeClaim): LedgerEntry => ({ message_id: c.message_id, thread_id: c.thread_id, route_name: null });
const claimOf = (e: LedgerEntry): DedupeClaim => ({ message_id: e.message_id, thread_id: e.thread_id });

/** The live claim on `key`, if any. */
export async function liveClaim(env: Env, namespace: string, key: string, nowMs: number): Promise<DedupeClaim | null> {
  const k = { namespace, key };
  const held = await ledgerShard(env, k).find(k, nowMs);
  return held ? claimOf(held) : null;
}

/** Claims `key` for `mine` unless a live claim holds it (an expired one is replaced); answers the claim that holds. */
export async function claimKey(env: Env, namespace: string, key: string, mine: DedupeClaim, expiresAtMs: number, nowMs: number): Promise<DedupeClaim> {
  const k = { namespace, key };
  return claimOf(await ledgerShard(env, k).claim(k, entry(mine), expiresAtMs, nowMs));
}

/** Releases `key` if `messageId` still holds it (a refused admission must not burn the key). */
export async function releaseKey(env: Env, namespace: string, key: string, messageId: string): Promise<void> {
  const k = { namespace, key };
  await ledgerShard(env, k).release(k, messageId);
}

/** Points the claim on `key` (held by `claim.message_id`) at another thread, keeping its expiry window. */
export async function repointClaim(env: Env, namespace: string, key: string, claim: DedupeClaim, expiresAtMs: number): Promise<void> {
  const k = { namespace, key };
  await ledgerShard(env, k).put(k, entry(claim), expiresAtMs);
}
