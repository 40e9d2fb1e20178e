/**
 * BucketDirectory: the deployment's list of live rate buckets, bounded by
 * `address_bucket_max_entries` (spec §8: "max buckets per worker; a flood evicts").
 *
 * Each AddressBucket registers here when it is created and leaves when it has refilled and
 * forgotten itself. Past the bound, the least recently created buckets are evicted: their
 * addresses start again from a full bucket, exactly as an evicted in-memory entry would, so a
 * flood of new addresses cannot grow bucket state without limit. Only bucket creation and expiry
 * reach this object; a take on an existing bucket never does.
 */
import { DurableObject } from "cloudflare:workers";
import type { BucketDirectoryRpc } from "../src/conversations/door/bucket-rpc";
import type { Env } from "../src/platform/env";
import { type ObjectSchema, migrateSchema } from "../src/platform/persistence/object-sql";

/** The directory's schema; version 1 is the table as first created, adopted with its rows. */
export const BUCKET_DIRECTORY_SCHEMA: ObjectSchema = {
  name: "bucket-directory",
  steps: [["CREATE TABLE IF NOT EXISTS buckets (key TEXT PRIMARY KEY, seq INTEGER NOT NULL)", "CREATE INDEX IF NOT EXISTS buckets_seq ON buckets(seq)"]],
};

/** The one directory of live buckets; see the module comment. */
export class BucketDirectory extends DurableObject<Env> implements BucketDirectoryRpc {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      migrateSchema(ctx.storage.sql, BUCKET_DIRECTORY_SCHEMA);
    });
  }

  /** Records a new bucket; answers the keys evicted to stay within `maxEntries`, oldest first. */
  async register(key: string, maxEntries: number): Promise<string[]> {
    const sql = this.ctx.storage.sql;
    const next = (sql.exec<{ s: number | null }>("SELECT MAX(seq) AS s FROM buckets").one().s ?? 0) + 1;
    sql.exec("INSERT INTO buckets (key, seq) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET seq = excluded.seq", key, next);
    const count = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM buckets").one().n;
    if (count <= maxEntries) return [];
    const evicted = sql
      .exec<{ key: string }>("SELECT key FROM buckets WHERE key != ? ORDER BY seq LIMIT ?", key, count - maxEntries)
      .toArray()
      .map((r) => r.key);
    for (const k of evicted) sql.exec("DELETE FROM buckets WHERE key = ?", k);
    return evicted;
  }

  /** A bucket that refilled and forgot itself leaves the directory. */
  async unregister(key: string): Promise<void> {
    this.ctx.storage.sql.exec("DELETE FROM buckets WHERE key = ?", key);
  }

  /** How many buckets are live (for tests and operators). */
  async size(): Promise<number> {
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM buckets").one().n;
  }
}
