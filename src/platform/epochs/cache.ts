/**
 * An isolate cache of D1 reads, each entry validated on every use against its subject's access
 * epoch (rpc.ts), so a cached read is used only while no write that could change it has been
 * published since it was made.
 *
 * The order is what makes it safe: the token is read before D1 is, and a writer bumps the token
 * after its D1 commit. A read that raced a write therefore either saw the new rows, or was filed
 * under a token the write's bump has since replaced.
 */
import type { Env } from "../env";
import { type Subject, readEpoch } from "./rpc";

interface Entry<V> {
  value: V;
  token: string;
  at: number;
}

/**
 * Entries older than this are read again even when their token still matches: a bound on what a
 * write whose publication failed (the writer crashed between its commit and its bump) can leave
 * cached until the next publisher or the cron pass catches up.
 */
const MAX_AGE_MS = 5 * 60_000;

/**
 * Bound: `max` entries per isolate (the key cache 4,096, the route caches 2,048 each, the web
 * reads 2,048). Eviction: past the bound the least recently used entry goes; an entry found stale
 * (its token moved, or older than MAX_AGE_MS) is replaced when used; an unknown subject is never kept.
 */
export class EpochCache<V> {
  private readonly entries = new Map<string, Entry<V>>();

  /** `max`: entries kept per isolate; the least recently used go first. */
  constructor(private readonly max: number) {}

  /** Entries held (tests, and the bound above). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The value filed under `subject`: the cached one while its token is current, else `load()`'s,
   * cached when not null (an unknown key or route is read again every time, so a new one is found
   * at once).
   */
  async get(env: Env, subject: Subject, load: () => Promise<V | null>, nowMs = Date.now()): Promise<V | null> {
    const token = await readEpoch(env, subject);
    const hit = this.entries.get(subject);
    if (hit && hit.token === token && nowMs - hit.at < MAX_AGE_MS) {
      // Re-inserted so that the map's order is the order of last use.
      this.entries.delete(subject);
      this.entries.set(subject, hit);
      return hit.value;
    }
    const value = await load();
    if (value === null) {
      this.entries.delete(subject);
      return null;
    }
    this.entries.set(subject, { value: deepFreeze(value), token, at: nowMs });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
    return value;
  }

  /** As `get`, for a loader that always finds a value (an absent row is itself a value worth caching). */
  async read(env: Env, subject: Subject, load: () => Promise<V>, nowMs = Date.now()): Promise<V> {
    const value = await this.get(env, subject, load, nowMs);
    if (value === null) throw new Error(`the loader of ${subject.split(":")[0]} entries answered null`);
    return value;
  }

  /** Forgets every entry (tests that rewrite D1 behind the service's back). */
  clear(): void {
    this.entries.clear();
  }
}

/** Cached values are shared by every request of the isolate: freezing them turns a mutation into an error. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
