import { z } from "zod";
import { HttpError } from "../http/errors";
import { jsonColumn, validStored } from "../store/parse-stored";

/** A stored key as the rest of the code sees it (never the raw key, never the hash). */
export interface KeyRecord {
  user_id: string;
  description: string;
  scopes: string[];
  condition: string | null;
  owner_user_id: string | null;
  disabled: boolean;
  key_fingerprint: string;
  created_at: string;
  updated_at: string;
}

const row = z.object({
  user_id: z.string(),
  description: z.string(),
  scopes: jsonColumn(z.array(z.string())),
  condition: z.string().nullable(),
  owner_user_id: z.string().nullable(),
  disabled: z.number().transform((n) => n !== 0),
  key_fingerprint: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

const COLUMNS = "user_id, description, scopes, condition, owner_user_id, disabled, key_fingerprint, created_at, updated_at";

function toRecord(r: unknown): KeyRecord {
  // A row we cannot read is corrupt storage, not bad input: fail loudly as a 500.
  return validStored(row, r, "api_keys row");
}

export async function findByHash(db: D1Database, keyHash: string): Promise<(KeyRecord & { key_hash: string }) | null> {
  const r = await db.prepare(`SELECT ${COLUMNS}, key_hash FROM api_keys WHERE key_hash = ?`).bind(keyHash).first();
  return r ? { ...toRecord(r), key_hash: String((r as { key_hash: string }).key_hash) } : null;
}

/** A key with its owner's live record (null for an unowned key or a missing owner). */
export interface KeyWithOwner {
  key: KeyRecord;
  owner: KeyRecord | null;
}

/** Select-list naming table `alias`'s key columns with `prefix` (for joins that read a key). */
export function keyColumns(alias: string, prefix: string): string {
  return COLUMNS.split(", ")
    .map((c) => `${alias}.${c} AS ${prefix}${c}`)
    .join(", ");
}
const WITH_OWNER = `SELECT ${keyColumns("k", "")}, k.key_hash AS key_hash, ${keyColumns("o", "o_")} FROM api_keys k LEFT JOIN api_keys o ON o.user_id = k.owner_user_id`;

/** One statement reading a key and its owner by raw-key hash (so a request costs one D1 query). */
export function keyWithOwnerByHash(db: D1Database, keyHash: string): D1PreparedStatement {
  return db.prepare(`${WITH_OWNER} WHERE k.key_hash = ?`).bind(keyHash);
}

/** One statement reading a key and its owner by user_id (batched into a turn's single read). */
export function keyWithOwnerByUserId(db: D1Database, userId: string): D1PreparedStatement {
  return db.prepare(`${WITH_OWNER} WHERE k.user_id = ?`).bind(userId);
}

/** Parses a row of the two statements above. */
export function parseKeyWithOwner(row: Record<string, unknown> | undefined | null): (KeyWithOwner & { key_hash: string }) | null {
  if (!row) return null;
  const found = parsePrefixedKey(row, "", "o_");
  return found ? { ...found, key_hash: String(row.key_hash) } : null;
}

/** Reads a key (columns prefixed `keyPrefix`) and its owner (`ownerPrefix`) out of a joined row. */
export function parsePrefixedKey(row: Record<string, unknown>, keyPrefix: string, ownerPrefix: string): KeyWithOwner | null {
  const pick = (prefix: string) => Object.fromEntries(COLUMNS.split(", ").map((c) => [c, row[`${prefix}${c}`]]));
  const key = pick(keyPrefix);
  if (key.user_id === null || key.user_id === undefined) return null;
  const owner = pick(ownerPrefix);
  return { key: toRecord(key), owner: owner.user_id === null || owner.user_id === undefined ? null : toRecord(owner) };
}

export async function findByUserId(db: D1Database, userId: string): Promise<KeyRecord | null> {
  const r = await db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE user_id = ?`).bind(userId).first();
  return r ? toRecord(r) : null;
}

export async function anyKeyExists(db: D1Database): Promise<boolean> {
  return (await db.prepare("SELECT 1 AS one FROM api_keys LIMIT 1").first()) !== null;
}

export interface NewKey {
  user_id: string;
  key_hash: string;
  description: string;
  scopes: string[];
  condition: string | null;
  owner_user_id: string | null;
  /** Minted disabled (bootstrap never is). */
  disabled?: boolean;
  key_fingerprint: string;
  now: string;
}

/** Inserts a key; a live duplicate user_id is 409. `onlyIfEmpty` makes bootstrap race-safe. */
export async function insertKey(db: D1Database, k: NewKey, onlyIfEmpty = false): Promise<boolean> {
  const sql = onlyIfEmpty
    ? `INSERT INTO api_keys (user_id, key_hash, description, scopes, condition, owner_user_id, disabled, key_fingerprint, created_at, updated_at)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM api_keys)`
    : `INSERT INTO api_keys (user_id, key_hash, description, scopes, condition, owner_user_id, disabled, key_fingerprint, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
  try {
    const res = await db
      .prepare(sql)
      .bind(k.user_id, k.key_hash, k.description, JSON.stringify(k.scopes), k.condition, k.owner_user_id, k.disabled ? 1 : 0, k.key_fingerprint, k.now, k.now)
      .run();
    return (res.meta.changes ?? 0) > 0;
  } catch (err) {
    if (String(err).includes("UNIQUE")) throw new HttpError(409, "an api key with this user_id already exists");
    throw err;
  }
}

export interface KeyEdit {
  description?: string;
  scopes?: string[];
  condition?: string | null;
  disabled?: boolean;
  owner_user_id?: string | null;
}

export async function updateKey(db: D1Database, userId: string, edit: KeyEdit, now: string): Promise<void> {
  const sets: string[] = [];
  const args: unknown[] = [];
  if (edit.description !== undefined) (sets.push("description = ?"), args.push(edit.description));
  if (edit.scopes !== undefined) (sets.push("scopes = ?"), args.push(JSON.stringify(edit.scopes)));
  if (edit.condition !== undefined) (sets.push("condition = ?"), args.push(edit.condition));
  if (edit.disabled !== undefined) (sets.push("disabled = ?"), args.push(edit.disabled ? 1 : 0));
  if (edit.owner_user_id !== undefined) (sets.push("owner_user_id = ?"), args.push(edit.owner_user_id));
  sets.push("updated_at = ?");
  args.push(now, userId);
  await db.prepare(`UPDATE api_keys SET ${sets.join(", ")} WHERE user_id = ?`).bind(...args).run();
}

export async function deleteKey(db: D1Database, userId: string): Promise<boolean> {
  const res = await db.prepare("DELETE FROM api_keys WHERE user_id = ?").bind(userId).run();
  return (res.meta.changes ?? 0) > 0;
}
