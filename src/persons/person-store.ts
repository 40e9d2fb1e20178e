/**
 * A PersonDirectory's SQLite: persons, their address rows, open pairing codes (SHA-256
 * only) and the redeem throttle, with the operations the directory's verbs are made of. Synchronous
 * functions over the object's storage; the object runs each verb in one implicit transaction, so a
 * merge or an erase is atomic.
 */
import type { PersonAddress, PersonProfile, PersonView } from "./rpc";
import { z } from "zod";
import { TargetKind } from "../shared/kinds";
import { parseStored } from "../platform/persistence/stored-json";
import { DoorAddress, doorAddressKey } from "./pairing";
import { type ObjectSchema, type ObjectSql, columnsOf, migrateSchema, objectSql } from "../platform/persistence/object-sql";
import { VisitorProfile, mergeProfiles } from "../shared/visitor-profile";

/** The `target` meta row: the target this directory serves. */
const DirectoryTarget = z.object({ kind: TargetKind, name: z.string() });
/** An address row's `routes`: the routes it was seen on. */
const AddressRoutes = z.array(z.string());
/** A person's `profile` column: what the person told about themselves, and when it last changed. */
const StoredProfile = VisitorProfile.extend({ updated_at: z.string() });

/** The store's name in its statements' errors. */
const STORE = "person-directory";

/**
 * The `person-directory` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const PERSON_SCHEMA: ObjectSchema = {
  name: STORE,
  steps: [
    [
      "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
      "CREATE TABLE IF NOT EXISTS persons (person_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, locale TEXT)",
      `CREATE TABLE IF NOT EXISTS addresses (
    key TEXT PRIMARY KEY, person_id TEXT NOT NULL, door TEXT NOT NULL, channel TEXT, our_identity TEXT,
    address TEXT NOT NULL, routes TEXT NOT NULL, linked_at TEXT NOT NULL, seq INTEGER NOT NULL)`,
      "CREATE INDEX IF NOT EXISTS addresses_person ON addresses(person_id, seq)",
      `CREATE TABLE IF NOT EXISTS codes (
    hash TEXT PRIMARY KEY, conversation TEXT NOT NULL UNIQUE, route_name TEXT NOT NULL, address TEXT NOT NULL, expires_at INTEGER NOT NULL)`,
      "CREATE TABLE IF NOT EXISTS throttle (party TEXT PRIMARY KEY, failures INTEGER NOT NULL, locked_until INTEGER NOT NULL, expires_at INTEGER NOT NULL)",
    ],
    // v2: the person's profile (a web visitor's pre-chat answers and the site's vouched claims,
    // docs/persons.md "Profile"), JSON; null until one arrives. Erased with the person row.
    (s) => {
      if (!columnsOf(s, "persons").includes("profile")) objectSql(s, STORE).run`ALTER TABLE persons ADD COLUMN profile TEXT`;
    },
  ],
};

/** Brings the `person-directory` tables to their current version (idempotent). */
export function createPersonTables(sql: SqlStorage): void {
  migrateSchema(sql, PERSON_SCHEMA);
}

const iso = (ms: number) => new Date(ms).toISOString().replace("Z", "+00:00");

/** The target this directory serves (learned on its first write). */
export function directoryTarget(sql: SqlStorage): { kind: TargetKind; name: string } | null {
  const row = objectSql(sql, STORE).one<{ value: string }>`SELECT value FROM meta WHERE key = 'target'`;
  return row ? parseStored(DirectoryTarget, row.value, "meta.target") : null;
}

export function adoptTarget(sql: SqlStorage, target: { kind: TargetKind; name: string }): void {
  objectSql(sql, STORE).run`INSERT OR IGNORE INTO meta (key, value) VALUES ('target', ${JSON.stringify(target)})`;
}

/** The person owning address `key`, if any. */
export function personOfAddress(sql: SqlStorage, key: string): string | null {
  return objectSql(sql, STORE).one<{ person_id: string }>`SELECT person_id FROM addresses WHERE key = ${key}`?.person_id ?? null;
}

/** A person as the read door shows it, or null. */
export function personView(sql: SqlStorage, personId: string): PersonView | null {
  const q = objectSql(sql, STORE);
  const p = q.one<{
    person_id: string;
    created_at: string;
    locale: string | null;
    profile: string | null;
  }>`SELECT person_id, created_at, locale, profile FROM persons WHERE person_id = ${personId}`;
  const target = directoryTarget(sql);
  if (!p || !target) return null;
  const addresses = q<{ door: string; channel: string | null; our_identity: string | null; address: string; routes: string; linked_at: string }>`
    SELECT door, channel, our_identity, address, routes, linked_at FROM addresses WHERE person_id = ${personId} ORDER BY seq`.map(
    (a): PersonAddress => ({
      door: a.door as PersonAddress["door"],
      routes: parseStored(AddressRoutes, a.routes, "addresses.routes"),
      channel: a.channel,
      our_identity: a.our_identity,
      address: a.address,
      linked_at: a.linked_at,
    }),
  );
  return {
    person_id: p.person_id,
    target_kind: target.kind,
    target_name: target.name,
    created_at: p.created_at,
    addresses,
    locale: p.locale,
    profile: p.profile === null ? null : parseStored(StoredProfile, p.profile, "persons.profile"),
  };
}

/** A person's profile as stored (null: none, or no such person). */
function profileOf(q: ObjectSql, personId: string): PersonProfile | null {
  const raw = q.one<{ profile: string | null }>`SELECT profile FROM persons WHERE person_id = ${personId}`?.profile ?? null;
  return raw === null ? null : parseStored(StoredProfile, raw, "persons.profile");
}

/**
 * Folds `profile` into the person's: each field takes the newest value, marked verified only when
 * the site vouched for it (`mergeProfiles`). Writes only when something changed, so a turn that
 * carries the same profile again costs a read.
 */
export function notePersonProfile(sql: SqlStorage, personId: string, profile: VisitorProfile, nowMs: number): void {
  const q = objectSql(sql, STORE);
  const prev = profileOf(q, personId);
  const merged = mergeProfiles(prev ? { fields: prev.fields, verified: prev.verified } : null, profile);
  if (prev && JSON.stringify(merged) === JSON.stringify({ fields: prev.fields, verified: prev.verified })) return;
  const stored: PersonProfile = { ...merged, updated_at: iso(nowMs) };
  q.run`UPDATE persons SET profile = ${JSON.stringify(stored)} WHERE person_id = ${personId}`;
}

/** Creates a person holding nothing yet. */
export function createPerson(sql: SqlStorage, nowMs: number, locale: string | null): string {
  const personId = crypto.randomUUID();
  objectSql(sql, STORE).run`INSERT INTO persons (person_id, created_at, locale) VALUES (${personId}, ${iso(nowMs)}, ${locale})`;
  return personId;
}

/** The highest address sequence number so far (0 when there is none). */
function lastSeq(q: ObjectSql): number {
  return q.one<{ s: number | null }>`SELECT MAX(seq) AS s FROM addresses`?.s ?? 0;
}

/** Sets (or clears) a person's locale. */
export function setPersonLocale(sql: SqlStorage, personId: string, locale: string | null): void {
  objectSql(sql, STORE).run`UPDATE persons SET locale = ${locale} WHERE person_id = ${personId}`;
}

/** Adds (or moves) address `a` to `personId`, first seen on `route`. */
export function attachAddress(sql: SqlStorage, personId: string, a: DoorAddress, routes: string[], nowMs: number): void {
  const q = objectSql(sql, STORE);
  const seq = lastSeq(q);
  const channel = a.door === "channel" ? a.channel : null;
  const ourIdentity = a.door === "channel" ? a.our_identity : null;
  q.run`INSERT OR REPLACE INTO addresses (key, person_id, door, channel, our_identity, address, routes, linked_at, seq)
    VALUES (${doorAddressKey(a)}, ${personId}, ${a.door}, ${channel}, ${ourIdentity}, ${a.address}, ${JSON.stringify(routes)}, ${iso(nowMs)}, ${seq + 1})`;
}

/** Unions `route` into the routes of address `key`. */
export function addRoute(sql: SqlStorage, key: string, route: string): void {
  const q = objectSql(sql, STORE);
  const row = q.one<{ routes: string }>`SELECT routes FROM addresses WHERE key = ${key}`;
  if (!row) return;
  const routes = parseStored(AddressRoutes, row.routes, "addresses.routes");
  if (!routes.includes(route)) q.run`UPDATE addresses SET routes = ${JSON.stringify([...routes, route])} WHERE key = ${key}`;
}

/** How many addresses a person has. */
export function addressCount(sql: SqlStorage, personId: string): number {
  return objectSql(sql, STORE).one<{ n: number }>`SELECT COUNT(*) AS n FROM addresses WHERE person_id = ${personId}`?.n ?? 0;
}

/**
 * Moves every address of `from` to `to` (appended after `to`'s own) and deletes `from`. Their
 * profiles become one: the older one's fields first, the newer one's over them.
 */
export function absorb(sql: SqlStorage, to: string, from: string): void {
  const q = objectSql(sql, STORE);
  const mine = profileOf(q, to);
  const theirs = profileOf(q, from);
  if (theirs) {
    const [older, newer] = mine && mine.updated_at > theirs.updated_at ? [theirs, mine] : [mine, theirs];
    const merged = mergeProfiles(older ? { fields: older.fields, verified: older.verified } : null, { fields: newer.fields, verified: newer.verified });
    const stored: PersonProfile = { ...merged, updated_at: newer.updated_at };
    q.run`UPDATE persons SET profile = ${JSON.stringify(stored)} WHERE person_id = ${to}`;
  }
  const base = lastSeq(q);
  q.run`UPDATE addresses SET person_id = ${to}, seq = seq + ${base} WHERE person_id = ${from}`;
  q.run`DELETE FROM persons WHERE person_id = ${from}`;
}

/** Stores a code's hash for `conversation`, replacing its open one. */
export function putCode(sql: SqlStorage, hash: string, conversation: string, route: string, a: DoorAddress, expiresAt: number): void {
  const q = objectSql(sql, STORE);
  q.run`DELETE FROM codes WHERE conversation = ${conversation}`;
  q.run`INSERT OR REPLACE INTO codes (hash, conversation, route_name, address, expires_at)
    VALUES (${hash}, ${conversation}, ${route}, ${JSON.stringify(a)}, ${expiresAt})`;
}

/** Takes a live code by hash, atomically (single use): what it was minted from, or null. */
export function takeCode(sql: SqlStorage, hash: string, nowMs: number): { route_name: string; address: DoorAddress } | null {
  const q = objectSql(sql, STORE);
  const row = q.one<{ route_name: string; address: string; expires_at: number }>`SELECT route_name, address, expires_at FROM codes WHERE hash = ${hash}`;
  if (!row) return null;
  q.run`DELETE FROM codes WHERE hash = ${hash}`;
  return row.expires_at > nowMs ? { route_name: row.route_name, address: parseStored(DoorAddress, row.address, "codes.address") } : null;
}

/** The party's throttle: consecutive failures and the lock, while kept. */
export function throttleOf(sql: SqlStorage, party: string, nowMs: number): { failures: number; locked_until: number } {
  const row = objectSql(sql, STORE).one<{ failures: number; locked_until: number; expires_at: number }>`
    SELECT failures, locked_until, expires_at FROM throttle WHERE party = ${party}`;
  return row && row.expires_at > nowMs ? { failures: row.failures, locked_until: row.locked_until } : { failures: 0, locked_until: 0 };
}

export function setThrottle(sql: SqlStorage, party: string, failures: number, lockedUntil: number, expiresAt: number): void {
  objectSql(sql, STORE)
    .run`INSERT OR REPLACE INTO throttle (party, failures, locked_until, expires_at) VALUES (${party}, ${failures}, ${lockedUntil}, ${expiresAt})`;
}

export function clearThrottle(sql: SqlStorage, party: string): void {
  objectSql(sql, STORE).run`DELETE FROM throttle WHERE party = ${party}`;
}

/** Erases a person: its open codes, its address rows, then the person row. */
export function erasePerson(sql: SqlStorage, personId: string): void {
  const q = objectSql(sql, STORE);
  const keys = q<{ key: string }>`SELECT key FROM addresses WHERE person_id = ${personId}`.map((r) => r.key);
  for (const k of keys) q.run`DELETE FROM codes WHERE conversation = ${k}`;
  q.run`DELETE FROM addresses WHERE person_id = ${personId}`;
  q.run`DELETE FROM persons WHERE person_id = ${personId}`;
}

/** Reclaims expired codes and throttle rows; the earliest remaining expiry, if any. */
export function sweepExpired(sql: SqlStorage, nowMs: number): number | null {
  const q = objectSql(sql, STORE);
  q.run`DELETE FROM codes WHERE expires_at <= ${nowMs}`;
  q.run`DELETE FROM throttle WHERE expires_at <= ${nowMs}`;
  return (
    q.one<{ t: number | null }>`SELECT MIN(t) AS t FROM (SELECT MIN(expires_at) AS t FROM codes UNION ALL SELECT MIN(expires_at) FROM throttle)`?.t ?? null
  );
}
