import { z } from "zod";
import { HttpError } from "../platform/http/errors";
import { type SqlFragment, d1, exists, first, join, sql, trusted } from "../platform/persistence/d1";
import { jsonColumn, validStored } from "../platform/persistence/stored-json";
import { ScopeUrl } from "./custom-scopes";
import { snapshotKey, type KeyVersionAction } from "./key-versions";
import { RETIRED_USER_ID } from "./identity";
import { RoleGrants } from "./roles";
import type { KeyRecord, KeyWithOwner, RoleBound } from "./model";

export type { KeyRecord, KeyWithOwner, RoleBound };

const ScopeUrlTuples = z.array(z.tuple([z.string(), z.string(), z.number()]));

const row = z
  .object({
    user_id: z.string(),
    description: z.string(),
    scopes: jsonColumn(z.array(z.string())),
    condition: z.string().nullable(),
    owner_user_id: z.string().nullable(),
    disabled: z.number().transform((n) => n !== 0),
    key_fingerprint: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    role: z.string().nullable(),
    generation: z.number().int(),
    role_grants: jsonColumn(RoleGrants).nullable(),
    role_condition: z.string().nullable(),
    scope_urls: jsonColumn(ScopeUrlTuples),
  })
  .transform(
    ({ role_grants, role_condition, scope_urls, ...k }): KeyRecord => ({
      ...k,
      role_def: k.role !== null && role_grants !== null ? { grants: role_grants, condition: role_condition } : null,
      scope_urls: scope_urls.map(([scope_id, url, pattern]) => ({ scope_id, url, pattern: pattern !== 0 })),
    }),
  );

/** The stored columns of `api_keys` a KeyRecord is read from. */
const STORED = [
  "user_id",
  "description",
  "scopes",
  "condition",
  "owner_user_id",
  "disabled",
  "key_fingerprint",
  "created_at",
  "updated_at",
  "role",
  "generation",
];

/**
 * What a key record carries beyond its row, as correlated subqueries over the row aliased `alias`:
 * the named role's grants and condition, and the URLs of the custom scopes the key lists. They
 * are select-list expressions, so every statement that reads a key (the caller's, a route's
 * execution key, an owner) reads them in the same single statement, with no join to add.
 */
function computedColumns(alias: string): Record<string, string> {
  const rl = `rl_${alias}`;
  const sc = `sc_${alias}`;
  return {
    role_grants: `(SELECT ${rl}.grants FROM roles ${rl} WHERE ${rl}.name = ${alias}.role)`,
    role_condition: `(SELECT ${rl}.condition FROM roles ${rl} WHERE ${rl}.name = ${alias}.role)`,
    scope_urls: `(SELECT json_group_array(json_array(${sc}.scope_id, ${sc}.url, ${sc}.pattern)) FROM auth_scopes ${sc} WHERE ${sc}.scope_id IN (SELECT value FROM json_each(${alias}.scopes)))`,
  };
}

const NAMES = [...STORED, ...Object.keys(computedColumns("k"))];

function toRecord(r: unknown): KeyRecord {
  // A row we cannot read is corrupt storage, not bad input: fail loudly as a 500.
  return validStored(row, r, "api_keys row");
}

/** Select-list naming table `alias`'s key columns with `prefix` (for joins that read a key). */
export function keyColumns(alias: string, prefix: string): string {
  const computed = computedColumns(alias);
  return [...STORED.map((c) => `${alias}.${c} AS ${prefix}${c}`), ...Object.entries(computed).map(([name, sql]) => `${sql} AS ${prefix}${name}`)].join(", ");
}

export async function findByHash(db: D1Database, keyHash: string): Promise<(KeyRecord & { key_hash: string }) | null> {
  const r = await first(HashedRow, d1(db)`SELECT ${trusted(keyColumns("k", ""))}, k.key_hash AS key_hash FROM api_keys k WHERE k.key_hash = ${keyHash}`);
  return r ? { ...toRecord(r), key_hash: r.key_hash } : null;
}

/** A key row with its hash; the key's own columns are checked by `toRecord`. */
const HashedRow = z.looseObject({ key_hash: z.string() });

const WITH_OWNER = `SELECT ${keyColumns("k", "")}, k.key_hash AS key_hash, ${keyColumns("o", "o_")} FROM api_keys k LEFT JOIN api_keys o ON o.user_id = k.owner_user_id`;

/** One statement reading a key and its owner by raw-key hash (so a request costs one D1 query). */
export function keyWithOwnerByHash(db: D1Database, keyHash: string): D1PreparedStatement {
  return d1(db)`${trusted(WITH_OWNER)} WHERE k.key_hash = ${keyHash}`.prepared();
}

/** One statement reading a key and its owner by user_id (batched into a turn's single read). */
export function keyWithOwnerByUserId(db: D1Database, userId: string): D1PreparedStatement {
  return d1(db)`${trusted(WITH_OWNER)} WHERE k.user_id = ${userId}`.prepared();
}

/** Parses a row of the two statements above. */
export function parseKeyWithOwner(row: Record<string, unknown> | undefined | null): (KeyWithOwner & { key_hash: string }) | null {
  if (!row) return null;
  const found = parsePrefixedKey(row, "", "o_");
  return found ? { ...found, key_hash: String(row.key_hash) } : null;
}

/** Reads a key (columns prefixed `keyPrefix`) and its owner (`ownerPrefix`) out of a joined row. */
export function parsePrefixedKey(row: Record<string, unknown>, keyPrefix: string, ownerPrefix: string): KeyWithOwner | null {
  const pick = (prefix: string) => Object.fromEntries(NAMES.map((c) => [c, row[`${prefix}${c}`]]));
  const key = pick(keyPrefix);
  if (key.user_id === null || key.user_id === undefined) return null;
  const owner = pick(ownerPrefix);
  return { key: toRecord(key), owner: owner.user_id === null || owner.user_id === undefined ? null : toRecord(owner) };
}

export async function findByUserId(db: D1Database, userId: string): Promise<KeyRecord | null> {
  const r = await first(z.looseObject({}), d1(db)`SELECT ${trusted(keyColumns("k", ""))} FROM api_keys k WHERE k.user_id = ${userId}`);
  return r ? toRecord(r) : null;
}

export async function anyKeyExists(db: D1Database): Promise<boolean> {
  return exists(d1(db)`SELECT 1 AS one FROM api_keys LIMIT 1`);
}

/** Who made a change, for the version row (null: the bootstrap token, or a test). */
export interface Change {
  actor: string | null;
  action: KeyVersionAction;
  now: string;
}

export interface NewKey {
  user_id: string;
  key_hash: string;
  description: string;
  scopes: string[];
  condition: string | null;
  owner_user_id: string | null;
  role?: string | null;
  /** Minted disabled (bootstrap never is). */
  disabled?: boolean;
  key_fingerprint: string;
  now: string;
}

/**
 * Inserts a key and its first version; a live duplicate user_id is 409. `onlyIfEmpty` makes
 * bootstrap race-safe (the version then follows only the row this call inserted: its fingerprint).
 *
 * A user_id a revoked key held (`user_id_tombstones`) is minted only when `mayReissue` (an admin,
 * or bootstrap, which runs only on a database with no key); otherwise it is the 409 naming the
 * rule. The check is part of the INSERT, so no revoke can slip between a check and the write. A
 * re-issued key starts the next generation (src/access-control/identity.ts).
 */
export async function insertKey(db: D1Database, k: NewKey, onlyIfEmpty = false, actor: string | null = null, mayReissue = onlyIfEmpty): Promise<boolean> {
  const guards = [
    ...(onlyIfEmpty ? [sql`NOT EXISTS (SELECT 1 FROM api_keys)`] : []),
    ...(mayReissue ? [] : [sql`NOT EXISTS (SELECT 1 FROM user_id_tombstones t WHERE t.user_id = ${k.user_id})`]),
  ];
  const insert = d1(
    db,
  )`INSERT INTO api_keys (user_id, key_hash, description, scopes, condition, owner_user_id, role, disabled, key_fingerprint, created_at, updated_at, generation)
    SELECT ${k.user_id}, ${k.key_hash}, ${k.description}, ${JSON.stringify(k.scopes)}, ${k.condition}, ${k.owner_user_id}, ${k.role ?? null}, ${k.disabled ? 1 : 0},
      ${k.key_fingerprint}, ${k.now}, ${k.now}, COALESCE((SELECT t.generation + 1 FROM user_id_tombstones t WHERE t.user_id = ${k.user_id}), 0)
    ${guards.length ? sql`WHERE ${join(guards, " AND ")}` : sql``}`;
  let inserted: boolean;
  try {
    const [res] = await db.batch([insert.prepared(), mintSnapshot(db, k, actor)]);
    inserted = (res.meta.changes ?? 0) > 0;
  } catch (err) {
    if (String(err).includes("UNIQUE")) throw new HttpError(409, "an api key with this user_id already exists");
    throw err;
  }
  // Not inserted and not bootstrap's empty-database guard: only the tombstone refuses.
  if (!inserted && !onlyIfEmpty) throw new HttpError(409, RETIRED_USER_ID, "user-id-retired");
  return inserted;
}

/** The mint's version row: only for the row carrying this mint's fingerprint. */
export function mintSnapshot(db: D1Database, k: NewKey, actor: string | null): D1PreparedStatement {
  return d1(
    db,
  )`INSERT INTO api_key_versions (user_id, version, description, scopes, condition, role, disabled, owner_user_id, key_fingerprint, action, actor, created_at)
    SELECT k.user_id, (SELECT COALESCE(MAX(v.version), 0) + 1 FROM api_key_versions v WHERE v.user_id = k.user_id),
           k.description, k.scopes, k.condition, k.role, k.disabled, k.owner_user_id, k.key_fingerprint, 'mint', ${actor}, ${k.now}
    FROM api_keys k WHERE k.user_id = ${k.user_id} AND k.key_fingerprint = ${k.key_fingerprint}`.prepared();
}

export interface KeyEdit {
  description?: string;
  scopes?: string[];
  condition?: string | null;
  disabled?: boolean;
  owner_user_id?: string | null;
  role?: string | null;
  /** A re-mint: the new raw key's hash and a new fingerprint. */
  key_hash?: string;
  key_fingerprint?: string;
}

/** Applies an edit and appends the key's next version, in one D1 batch. */
export async function updateKey(db: D1Database, userId: string, edit: KeyEdit, change: Change): Promise<void> {
  const sets: SqlFragment[] = [];
  if (edit.description !== undefined) sets.push(sql`description = ${edit.description}`);
  if (edit.scopes !== undefined) sets.push(sql`scopes = ${JSON.stringify(edit.scopes)}`);
  if (edit.condition !== undefined) sets.push(sql`condition = ${edit.condition}`);
  if (edit.disabled !== undefined) sets.push(sql`disabled = ${edit.disabled ? 1 : 0}`);
  if (edit.owner_user_id !== undefined) sets.push(sql`owner_user_id = ${edit.owner_user_id}`);
  if (edit.role !== undefined) sets.push(sql`role = ${edit.role}`);
  if (edit.key_hash !== undefined) sets.push(sql`key_hash = ${edit.key_hash}`);
  if (edit.key_fingerprint !== undefined) sets.push(sql`key_fingerprint = ${edit.key_fingerprint}`);
  sets.push(sql`updated_at = ${change.now}`);
  await db.batch([
    d1(db)`UPDATE api_keys SET ${join(sets)} WHERE user_id = ${userId}`.prepared(),
    snapshotKey(db, userId, change.action, change.actor, change.now),
  ]);
}
