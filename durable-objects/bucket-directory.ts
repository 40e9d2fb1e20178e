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
import { type ObjectSchema, type ObjectSql, migrateSchema, objectSql } from "../src/platform/persistence/object-sql";
import { startObject } from "../src/platform/persistence/object-start";

/** The directory's schema; version 1 is the table as first created, adopted with its rows. */
export const BUCKET_DIRECTORY_SCHEMA: ObjectSchema = {
  name: "bucket-directory",
  steps: [["CREATE TABLE IF NOT EXISTS buckets (key TEXT PRIMARY KEY, seq INTEGER NOT NULL)", "CREATE INDEX IF NOT EXISTS buckets_seq ON buckets(seq)"]],
};

/** The one directory of live buckets; see the module comment. */
export class BucketDirectory extends DurableObject<Env> implements BucketDirectoryRpc {
  private readonly q: ObjectSql;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: (storage) => migrateSchema(storage.sql, BUCKET_DIRECTORY_SCHEMA) });
    this.q = objectSql(ctx.storage.sql, BUCKET_DIRECTORY_SCHEMA.name);
  }

  /** Records a new bucket; answers the keys evicted to stay within `maxEntries`, oldest first. */
  async register(key: string, maxEntries: number): Promise<string[]> {
    const q = this.q;
    const next = (q.one<{ s: number | null }>`SELECT MAX(seq) AS s FROM buckets`?.s ?? 0) + 1;
    q.run`INSERT INTO buckets (key, seq) VALUES (${key}, ${next}) ON CONFLICT(key) DO UPDATE SET seq = excluded.seq`;
    const count = this.size_();
    if (count <= maxEntries) return [];
    const evicted = q<{ key: string }>`SELECT key FROM buckets WHERE key != ${key} ORDER BY seq LIMIT ${count - maxEntries}`.map((r) => r.key);
    for (const k of evicted) q.run`DELETE FROM buckets WHERE key = ${k}`;
    return evicted;
  }

  /** A bucket that refilled and forgot itself leaves the directory. */
  async unregister(key: string): Promise<void> {
    this.q.run`DELETE FROM buckets WHERE key = ${key}`;
  }

  /** How many buckets are live (for tests and operators). */
  async size(): Promise<number> {
    return this.size_();
  }

  private size_(): number {
    return this.q.one<{ n: number }>`SELECT COUNT(*) AS n FROM buckets`?.n ?? 0;
  }
}
