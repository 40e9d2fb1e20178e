/**
 * MarketplaceLock: the deployment's one fleet lock for marketplace writes. A thin shell
 * over the pure lease policy of src/marketplace/lease.ts: one SQLite row holds the lease, and each
 * verb reads and writes it in one synchronous block, so two callers can never both win. The clock
 * is the object's own, one clock for every lease. The contract is src/marketplace/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { AcquireDecision, LockLease, MarketplaceLockRpc } from "../src/marketplace/rpc";
import type { Env } from "../src/platform/env";
import { type Clock, systemClock } from "../src/platform/clock";
import { decideAcquire, decideRenew, isLive, mayRelease } from "../src/marketplace/lease";
import { type ObjectSchema, type ObjectSql, migrateSchema, objectSql } from "../src/platform/persistence/object-sql";
import { startObject } from "../src/platform/persistence/object-start";

/** The lock's schema; version 1 is the lease table as first created, adopted with a held lease. */
export const MARKETPLACE_LOCK_SCHEMA: ObjectSchema = {
  name: "marketplace-lock",
  steps: [
    [
      "CREATE TABLE IF NOT EXISTS lease (id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL, operation TEXT NOT NULL, acquired_at INTEGER NOT NULL, expires_at INTEGER NOT NULL)",
    ],
  ],
};

type Row = { holder: string; operation: string; acquired_at: number; expires_at: number };

export class MarketplaceLock extends DurableObject<Env> implements MarketplaceLockRpc {
  /** The clock the object reads time from. */
  private readonly clock: Clock = systemClock;

  private readonly q: ObjectSql;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: (storage) => migrateSchema(storage.sql, MARKETPLACE_LOCK_SCHEMA) });
    this.q = objectSql(ctx.storage.sql, MARKETPLACE_LOCK_SCHEMA.name);
  }

  private read(): LockLease | null {
    const row = this.q.one<Row>`SELECT holder, operation, acquired_at, expires_at FROM lease WHERE id = 1`;
    return row ? { holder: row.holder, operation: row.operation, acquired_at: Number(row.acquired_at), expires_at: Number(row.expires_at) } : null;
  }

  private write(lease: LockLease): void {
    this.q
      .run`INSERT INTO lease (id, holder, operation, acquired_at, expires_at) VALUES (1, ${lease.holder}, ${lease.operation}, ${lease.acquired_at}, ${lease.expires_at})
       ON CONFLICT(id) DO UPDATE SET holder = excluded.holder, operation = excluded.operation, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`;
  }

  async acquire(holder: string, operation: string, leaseMs: number): Promise<AcquireDecision> {
    const decision = decideAcquire(this.read(), holder, operation, leaseMs, this.clock.now());
    if (decision.ok) this.write(decision.lease);
    return decision;
  }

  async renew(holder: string, leaseMs: number): Promise<LockLease | null> {
    const lease = decideRenew(this.read(), holder, leaseMs, this.clock.now());
    if (lease) this.write(lease);
    return lease;
  }

  async release(holder: string): Promise<boolean> {
    if (!mayRelease(this.read(), holder)) return false;
    this.q.run`DELETE FROM lease WHERE id = 1`;
    return true;
  }

  async current(): Promise<LockLease | null> {
    const lease = this.read();
    return isLive(lease, this.clock.now()) ? lease : null;
  }
}
