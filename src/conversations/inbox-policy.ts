/**
 * Routes' inbox policies (docs/inbox.md) in D1 `route_inbox`, and the isolate cache the thread
 * objects read them through. A policy write bumps its route's access epoch (the table's triggers,
 * migrations/0028_inbox.sql), so a thread sees a new policy at its next timer, and a steady one
 * costs no D1 round trip. A thread reads its policy only when it sets a timer (a handoff, a
 * customer message while a human owns it), never on the agent's turns.
 *
 * The route's business hours (src/conversations/business-hours.ts) live beside it in `route_hours`
 * (migrations/0031_business_hours.sql): one statement reads both into one cache entry, so the hours
 * cost a thread nothing more than its policy does.
 */
import { z } from "zod";
import { EpochCache } from "../platform/epochs/cache";
import type { Env } from "../platform/env";
import { type Statement, all, d1, first, run } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { BusinessHours } from "./business-hours";
import { DEFAULT_POLICY, type InboxPolicy, StoredInboxPolicy } from "./model/inbox";

/** What a route's cache entry holds: its inbox policy and its business hours (null: always open). */
interface RoutePolicies {
  policy: StoredInboxPolicy;
  hours: BusinessHours | null;
}

const cache = new EpochCache<RoutePolicies>(2048);
const NO_POLICY: StoredInboxPolicy = { ...DEFAULT_POLICY, events_secret: null };

const PolicyRow = z.object({ policy: z.string(), updated_at: z.string(), updated_by: z.string().nullable() });

/** The policy without its events secret: what a door may answer. */
export function publicPolicy(stored: StoredInboxPolicy): InboxPolicy {
  const { events_secret: _secret, ...policy } = stored;
  return policy;
}

/** The stored policy of `routeName` (with its events secret) with when and by whom it was written, or null. */
export async function readInboxPolicy(
  db: D1Database,
  routeName: string,
): Promise<{ policy: StoredInboxPolicy; updated_at: string; updated_by: string | null } | null> {
  const row = await first(PolicyRow, d1(db)`SELECT policy, updated_at, updated_by FROM route_inbox WHERE route_name = ${routeName}`);
  if (!row) return null;
  return { policy: parseStored(StoredInboxPolicy, row.policy, "route_inbox policy"), updated_at: row.updated_at, updated_by: row.updated_by };
}

/** Replaces the route's policy (the route must exist: the caller checked it). */
export async function writeInboxPolicy(db: D1Database, routeName: string, policy: StoredInboxPolicy, by: string, now: Date): Promise<void> {
  await run(d1(
    db,
  )`INSERT INTO route_inbox (route_name, policy, updated_at, updated_by) VALUES (${routeName}, ${JSON.stringify(policy)}, ${now.toISOString()}, ${by})
    ON CONFLICT(route_name) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at, updated_by = excluded.updated_by`);
}

/** Drops the route's policy; answers whether one was stored. */
export async function deleteInboxPolicy(db: D1Database, routeName: string): Promise<boolean> {
  const r = await run(d1(db)`DELETE FROM route_inbox WHERE route_name = ${routeName}`);
  return r.changes > 0;
}

/** The policy in force for `routeName`: the stored one, else the defaults (also for a thread without a route). */
export async function inboxPolicyFor(env: Env, routeName: string | null): Promise<InboxPolicy> {
  return publicPolicy(await storedPolicyFor(env, routeName));
}

/** As `inboxPolicyFor`, with the events secret: for the thread's event POSTs only. */
export async function storedPolicyFor(env: Env, routeName: string | null): Promise<StoredInboxPolicy> {
  return (await policiesFor(env, routeName)).policy;
}

/** The policy in force and the business hours, in one cache read: what a thread's handoff reads. */
export async function routePoliciesFor(env: Env, routeName: string | null): Promise<InboxPolicy & { business_hours: BusinessHours | null }> {
  const both = await policiesFor(env, routeName);
  return { ...publicPolicy(both.policy), business_hours: both.hours };
}

const BothRow = z.object({ policy: z.string().nullable(), hours: z.string().nullable() });

async function policiesFor(env: Env, routeName: string | null): Promise<RoutePolicies> {
  if (routeName === null) return { policy: NO_POLICY, hours: null };
  const found = await cache.get(env, `route:${routeName}`, async () => {
    // One statement for both tables: a cache miss costs the same round trip as before the hours.
    const row = await first(
      BothRow,
      d1(
        env.DB,
      )`SELECT (SELECT policy FROM route_inbox WHERE route_name = ${routeName}) AS policy, (SELECT hours FROM route_hours WHERE route_name = ${routeName}) AS hours`,
    );
    return {
      policy: row?.policy ? parseStored(StoredInboxPolicy, row.policy, "route_inbox policy") : NO_POLICY,
      hours: row?.hours ? parseStored(BusinessHours, row.hours, "route_hours hours") : null,
    };
  });
  return found ?? { policy: NO_POLICY, hours: null };
}

const HoursRow = z.object({ hours: z.string(), updated_at: z.string(), updated_by: z.string().nullable() });

/** The stored business hours of `routeName` with when and by whom they were written, or null. */
export async function readBusinessHours(
  db: D1Database,
  routeName: string,
): Promise<{ hours: BusinessHours; updated_at: string; updated_by: string | null } | null> {
  const row = await first(HoursRow, d1(db)`SELECT hours, updated_at, updated_by FROM route_hours WHERE route_name = ${routeName}`);
  if (!row) return null;
  return { hours: parseStored(BusinessHours, row.hours, "route_hours hours"), updated_at: row.updated_at, updated_by: row.updated_by };
}

/** Replaces the route's business hours (the route must exist: the caller checked it). */
export async function writeBusinessHours(db: D1Database, routeName: string, hours: BusinessHours, by: string, now: Date): Promise<void> {
  await run(putBusinessHoursStatement(db, routeName, hours, now.toISOString(), by));
}

/** Drops the route's business hours; answers whether some were stored. */
export async function deleteBusinessHours(db: D1Database, routeName: string): Promise<boolean> {
  const r = await run(d1(db)`DELETE FROM route_hours WHERE route_name = ${routeName}`);
  return r.changes > 0;
}

const StoredHoursRow = z.object({ route_name: z.string(), hours: z.string(), updated_at: z.string(), updated_by: z.string().nullable() });

/** Every route's stored business hours, by route name (the backup's `route-hours` section). */
export async function allBusinessHours(
  db: D1Database,
): Promise<Array<{ route_name: string; hours: BusinessHours; updated_at: string; updated_by: string | null }>> {
  const rows = await all(StoredHoursRow, d1(db)`SELECT route_name, hours, updated_at, updated_by FROM route_hours ORDER BY route_name`);
  return rows.map((r) => ({ ...r, hours: parseStored(BusinessHours, r.hours, "route_hours hours") }));
}

/** The statement that stores `hours` for `routeName` as written at `updatedAt` by `updatedBy` (a restore keeps both). */
export function putBusinessHoursStatement(db: D1Database, routeName: string, hours: BusinessHours, updatedAt: string, updatedBy: string | null): Statement {
  return d1(db)`INSERT INTO route_hours (route_name, hours, updated_at, updated_by) VALUES (${routeName}, ${JSON.stringify(hours)}, ${updatedAt}, ${updatedBy})
    ON CONFLICT(route_name) DO UPDATE SET hours = excluded.hours, updated_at = excluded.updated_at, updated_by = excluded.updated_by`;
}
