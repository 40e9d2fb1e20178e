/**
 * Access epochs: the tokens that tell an isolate whether what it cached from D1 is still current
 * (docs/architecture.md, "Keys and routes without D1"). A fixed set of AccessEpoch objects,
 * EPOCH_SHARDS shards of EPOCH_REPLICAS replicas each, holds in memory only one token per subject:
 * the object's incarnation (random, minted when it starts) and how often the subject was bumped
 * since. A write that may change what the doors cached under a subject bumps it in every replica
 * of its shard. A restarted object has a new incarnation, which is what makes memory enough: a
 * restart invalidates, it never validates.
 */
import type { Env } from "../env";

/** One epoch shard replica. */
export interface AccessEpochRpc {
  /** The current token of each subject, in order. */
  read(subjects: string[]): Promise<string[]>;
  /** Changes to these subjects were committed to D1: every token read before this is stale. */
  bump(subjects: string[]): Promise<void>;
}

/**
 * Shards the subjects are spread over. Tokens live in memory only, so this may change between
 * deployments: a subject read from another shard simply misses once.
 */
export const EPOCH_SHARDS = 8;

/**
 * Replicas of each shard. A write bumps them all; each isolate reads the one it picked at start
 * (`ISOLATE_REPLICA`), so one busy route or key spreads its reads over this many objects.
 */
export const EPOCH_REPLICAS = 4;

/**
 * The replica this isolate reads. Fixed for the isolate's life: tokens differ between replicas,
 * so an isolate that changed replica would find every cached entry stale.
 */
const ISOLATE_REPLICA = Math.floor(Math.random() * EPOCH_REPLICAS);

/** What a cached entry is filed under (see migrations/0026_access_changes.sql for what bumps each). */
export type Subject = `key:${string}` | `user:${string}` | `route:${string}` | `ident:${string}`;

/** The shard of `subject` (FNV-1a over its UTF-16 code units). */
export function epochShard(subject: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < subject.length; i++) h = Math.imul(h ^ subject.charCodeAt(i), 0x01000193);
  return (h >>> 0) % EPOCH_SHARDS;
}

function stub(env: Env, shard: number, replica: number): AccessEpochRpc {
  return env.ACCESS_EPOCHS.get(env.ACCESS_EPOCHS.idFromName(`${shard}/${replica}`));
}

/** The token of `subject` as this isolate's replica of its shard holds it. */
export async function readEpoch(env: Env, subject: Subject): Promise<string> {
  const [token] = await stub(env, epochShard(subject), ISOLATE_REPLICA).read([subject]);
  return token;
}

/** Bumps `subjects` in every replica of their shards, one call per shard replica. */
export async function bumpEpochs(env: Env, subjects: readonly string[]): Promise<void> {
  const byShard = new Map<number, string[]>();
  for (const s of subjects) {
    const shard = epochShard(s);
    const list = byShard.get(shard);
    if (list) list.push(s);
    else byShard.set(shard, [s]);
  }
  const calls: Promise<void>[] = [];
  for (const [shard, list] of byShard) for (let r = 0; r < EPOCH_REPLICAS; r++) calls.push(stub(env, shard, r).bump(list));
  await Promise.all(calls);
}

/** A token as an epoch replica answers it. */
export function epochToken(incarnation: string, bumps: number): string {
  return `${incarnation}/${bumps}`;
}
