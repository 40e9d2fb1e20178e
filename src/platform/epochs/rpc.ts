/**
 * Access epochs: the tokens that tell an isolate whether what it cached from D1 is still current
 * (docs/architecture.md, "Keys and routes without D1"). A fixed set of AccessEpoch objects,
 * ACCESS_EPOCH_SHARDS shards of ACCESS_EPOCH_REPLICAS replicas each, holds in memory only one token per subject:
 * the object's incarnation (random, minted when it starts) and how often the subject was bumped
 * since. A write that may change what the doors cached under a subject bumps it in every replica
 * of its shard. A restarted object has a new incarnation, which is what makes memory enough: a
 * restart invalidates, it never validates.
 */
import type { Env } from "../env";
import { bumpLayouts, epochLayout } from "../settings/epoch-settings";

/** One epoch shard replica. */
export interface AccessEpochRpc {
  /** The current token of each subject, in order. */
  read(subjects: string[]): Promise<string[]>;
  /** Changes to these subjects were committed to D1: every token read before this is stale. */
  bump(subjects: string[]): Promise<void>;
}

/**
 * The replica this isolate reads, drawn once at start (`% replicas`): fixed for the isolate's
 * life, since tokens differ between replicas and an isolate that changed replica would find every
 * cached entry stale. The layout itself (ACCESS_EPOCH_SHARDS × ACCESS_EPOCH_REPLICAS) is a
 * setting (src/platform/settings/epoch-settings.ts).
 */
const ISOLATE_DRAW = Math.floor(Math.random() * 0x7fffffff);

/** What a cached entry is filed under (see migrations/0026_access_changes.sql for what bumps each). */
export type Subject = `key:${string}` | `user:${string}` | `route:${string}` | `ident:${string}`;

/** The shard of `subject` among `shards` (FNV-1a over its UTF-16 code units). */
export function epochShard(subject: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < subject.length; i++) h = Math.imul(h ^ subject.charCodeAt(i), 0x01000193);
  return (h >>> 0) % shards;
}

function stub(env: Env, shard: number, replica: number): AccessEpochRpc {
  return env.ACCESS_EPOCHS.get(env.ACCESS_EPOCHS.idFromName(`${shard}/${replica}`));
}

/** The token of `subject` as this isolate's replica of its shard holds it. */
export async function readEpoch(env: Env, subject: Subject): Promise<string> {
  const { shards, replicas } = epochLayout(env);
  const [token] = await stub(env, epochShard(subject, shards), ISOLATE_DRAW % replicas).read([subject]);
  return token;
}

/**
 * Bumps `subjects` in every replica of their shards, one call per shard replica, under the layout
 * in force and under each layout ACCESS_EPOCH_ALSO_BUMP names (src/platform/settings/epoch-settings.ts):
 * during a layout change, isolates that read either layout see the bump. Layouts share object
 * names (`<shard>/<replica>`), so an object both name is called once with both lists.
 */
export async function bumpEpochs(env: Env, subjects: readonly string[]): Promise<void> {
  const byObject = new Map<string, Set<string>>();
  for (const { shards, replicas } of bumpLayouts(env)) {
    for (const s of subjects) {
      const shard = epochShard(s, shards);
      for (let r = 0; r < replicas; r++) {
        const name = `${shard}/${r}`;
        const list = byObject.get(name);
        if (list) list.add(s);
        else byObject.set(name, new Set([s]));
      }
    }
  }
  await Promise.all([...byObject].map(([name, list]) => env.ACCESS_EPOCHS.get(env.ACCESS_EPOCHS.idFromName(name)).bump([...list])));
}

/** A token as an epoch replica answers it. */
export function epochToken(incarnation: string, bumps: number): string {
  return `${incarnation}/${bumps}`;
}
