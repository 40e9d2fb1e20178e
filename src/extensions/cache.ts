/**
 * `cache` (wrapper): answers a repeated call from memory for `ttl_seconds` instead of calling the
 * tool again. Only successful results are kept.
 *
 * The cache is per isolate (each Worker isolate and each Durable Object keeps its own, lost when
 * it is evicted), so it saves calls, it does not promise them away: another isolate may call the
 * tool again within the TTL. An entry is keyed by the tool name, the preset version, the
 * extensions inside the cache (what the kept result has been through), the caller's kwargs in
 * canonical form and the key the call is for (user id and fingerprint: the execution key of a
 * turn or run, or the calling key of run-tool and a sub-MCP app): a result is never served to
 * another key, nor to the same key after a re-mint. A call for no key is not cached at all. A
 * hit still passes the live authorization the dispatcher does first, so a revoked key gets
 * nothing from it.
 *
 * Bounds: at most MAX_ENTRIES entries and MAX_TOTAL_BYTES of kept JSON per isolate (oldest used
 * dropped first); a result over MAX_ENTRY_BYTES is not kept. Values are kept as JSON text, so a
 * caller can never change what the next hit answers.
 */
import { z } from "zod";
import { sha256Hex } from "../access-control/crypto";
import { canonicalJson } from "./canonical";
import type { CallResult, ExtensionCall, ExtensionDef } from "./model";

export const CacheConfig = z.object({ ttl_seconds: z.number().int().min(1).max(3600).default(60) }).strict();
export type CacheConfig = z.infer<typeof CacheConfig>;

export const MAX_ENTRIES = 1000;
export const MAX_ENTRY_BYTES = 256 * 1024;
export const MAX_TOTAL_BYTES = 8 * 1024 * 1024;

interface Entry {
  expiresAt: number;
  json: string;
  bytes: number;
}

/** A bounded TTL map of JSON texts, least recently used dropped first. Pure apart from its own state. */
export class ResultCache {
  private readonly entries = new Map<string, Entry>();
  private total = 0;

  constructor(
    private readonly maxEntries = MAX_ENTRIES,
    private readonly maxTotalBytes = MAX_TOTAL_BYTES,
    private readonly maxEntryBytes = MAX_ENTRY_BYTES,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The kept JSON text for `key`, or null when absent or expired at `now`. */
  get(key: string, now: number): string | null {
    const e = this.entries.get(key);
    if (!e) return null;
    this.entries.delete(key);
    if (e.expiresAt <= now) {
      this.total -= e.bytes;
      return null;
    }
    this.entries.set(key, e); // most recently used last
    return e.json;
  }

  /** Keeps `json` under `key` until `expiresAt`; false when it is too large to keep. */
  set(key: string, json: string, expiresAt: number): boolean {
    const bytes = json.length * 2; // UTF-16 in memory: a bound, not an exact size
    if (bytes > this.maxEntryBytes) return false;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.total -= old.bytes;
    }
    this.entries.set(key, { expiresAt, json, bytes });
    this.total += bytes;
    for (const [k, e] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.total <= this.maxTotalBytes) break;
      this.entries.delete(k);
      this.total -= e.bytes;
    }
    return true;
  }

  clear(): void {
    this.entries.clear();
    this.total = 0;
  }
}

/** The one cache of this isolate. */
export const isolateCache = new ResultCache();

/** The entry key of a call (a digest, so a large kwargs object does not become a large key). */
export function cacheKey(call: Pick<ExtensionCall, "tool" | "version" | "inner" | "kwargs" | "caller">): Promise<string> {
  return sha256Hex(JSON.stringify([call.tool, call.version, call.inner, canonicalJson(call.kwargs), call.caller]));
}

/**
 * Serves `call` from `cache` when a live entry exists, else runs `next` and keeps a success. A
 * call with no caller is never cached: an entry it kept would be shared by every other call
 * without one, whoever made it.
 */
export async function withCache(cache: ResultCache, config: CacheConfig, call: ExtensionCall, next: () => Promise<CallResult>): Promise<CallResult> {
  if (call.caller === null) return next();
  const key = await cacheKey(call);
  const hit = cache.get(key, call.now());
  if (hit !== null) return { ok: true, value: JSON.parse(hit) };
  const r = await next();
  if (r.ok) {
    const json = JSON.stringify(r.value);
    // `undefined` (a tool answering nothing) has no JSON text; such a result is not kept.
    if (json !== undefined) cache.set(key, json, call.now() + config.ttl_seconds * 1000);
  }
  return r;
}

export const cache: ExtensionDef<CacheConfig> = {
  name: "cache",
  kind: "wrapper",
  description:
    "Answers a repeated call (same tool, preset version, kwargs and key: the execution key, or the calling key of run-tool and sub-MCP apps) from this isolate's memory for `ttl_seconds` (default 60, at most 3600). Only successes are kept; a result is never served to another key, and a call for no key is never cached.",
  config: CacheConfig,
  apply: (config, call, next) => withCache(isolateCache, config, call, next),
};
