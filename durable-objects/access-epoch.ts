/**
 * AccessEpoch: one replica of one epoch shard, holding the tokens an isolate validates its cached
 * key and route reads against (src/platform/epochs/rpc.ts). Memory only: a fresh instance mints a
 * new incarnation, so an evicted object makes entries stale rather than current.
 */
import { DurableObject } from "cloudflare:workers";
import { type AccessEpochRpc, epochToken } from "../src/platform/epochs/rpc";
import type { Env } from "../src/platform/env";

/**
 * The memory bound: subjects counted before the object starts over with a new incarnation (which
 * invalidates them all, so isolates re-read once). A subject costs about 100 bytes here.
 */
export const ACCESS_EPOCH_MAX_SUBJECTS = 100_000;

export class AccessEpoch extends DurableObject<Env> implements AccessEpochRpc {
  private incarnation = crypto.randomUUID();
  private readonly bumps = new Map<string, number>();

  /** Subjects counted in this incarnation (tests, and the bound above). */
  get subjectCount(): number {
    return this.bumps.size;
  }

  async read(subjects: string[]): Promise<string[]> {
    return subjects.map((s) => epochToken(this.incarnation, this.bumps.get(s) ?? 0));
  }

  async bump(subjects: string[]): Promise<void> {
    if (this.bumps.size + subjects.length > ACCESS_EPOCH_MAX_SUBJECTS) {
      this.bumps.clear();
      this.incarnation = crypto.randomUUID();
    }
    for (const s of subjects) this.bumps.set(s, (this.bumps.get(s) ?? 0) + 1);
  }
}
