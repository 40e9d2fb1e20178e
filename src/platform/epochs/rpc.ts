/**
 * Access epochs: the tokens that tell an isolate whether what it cached from D1 is still current
 * (docs/performance.md, "Keys and routes without D1"). One AccessEpoch object per subject and
 * replica holds, in memory only, a token that changes whenever a write to D1 may have changed
 * what the doors cached under that subject. A restarted object mints a new token, which is what
 * makes memory enough: a restart invalidates, it never validates.
 */
import type { Env } from "../env";

/** One subject's token holder. */
export interface AccessEpochRpc {
  /** The current token. */
  read(): Promise<string>;
  /** A change to the subject was committed to D1: every token read before this one is stale. */
  bump(): Promise<void>;
}

/**
 * How many objects hold each subject's token. A write bumps them all; each isolate reads one of
 * them (`ISOLATE_REPLICA`), so one busy route or key spreads its reads over this many objects.
 */
export const EPOCH_REPLICAS = 4;

/**
 * The replica this isolate reads. Fixed for the isolate's life: tokens differ between replicas,
 * so an isolate that changed replica would find every cached entry stale.
 */
const ISOLATE_REPLICA = Math.floor(Math.random() * EPOCH_REPLICAS);

/** What a cached entry is filed under (see migrations/0026_access_changes.sql for what bumps each). */
export type Subject = `key:${string}` | `user:${string}` | `route:${string}` | `ident:${string}`;

function stub(env: Env, subject: string, replica: number): AccessEpochRpc {
  return env.ACCESS_EPOCHS.get(env.ACCESS_EPOCHS.idFromName(`${replica}/${subject}`));
}

/** The token of `subject` as this isolate's replica holds it. */
export function readEpoch(env: Env, subject: Subject): Promise<string> {
  return stub(env, subject, ISOLATE_REPLICA).read();
}

/** Bumps every replica of `subject`. */
export async function bumpEpoch(env: Env, subject: string): Promise<void> {
  await Promise.all(Array.from({ length: EPOCH_REPLICAS }, (_, i) => stub(env, subject, i).bump()));
}
