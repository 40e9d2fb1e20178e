/**
 * Key policy history (docs/access-control.md, "Key policy history"): every change of a
 * key's policy appends a version, a snapshot of the key row as it is after the change (before it,
 * for a revoke). The snapshot statements run in the same D1 batch as the change itself, so the
 * history can neither miss a change nor record one that did not happen.
 */
import { z } from "zod";
import { CountRow, batch, d1, first, rowsOf, sql, trusted } from "../platform/persistence/d1";
import { jsonColumn } from "../platform/persistence/stored-json";

export const KEY_VERSION_ACTIONS = ["migrated", "mint", "edit", "scopes", "revoke", "rollback"] as const;
export type KeyVersionAction = (typeof KEY_VERSION_ACTIONS)[number];

/** One entry of a key's history. */
export const KeyVersion = z.object({
  user_id: z.string(),
  version: z.number().int(),
  description: z.string(),
  scopes: z.array(z.string()),
  condition: z.string().nullable(),
  role: z.string().nullable(),
  disabled: z.boolean(),
  owner_user_id: z.string().nullable(),
  key_fingerprint: z.string(),
  action: z.enum(KEY_VERSION_ACTIONS),
  actor: z.string().nullable(),
  created_at: z.string(),
});
export type KeyVersion = z.infer<typeof KeyVersion>;

/** The raw D1 row (for backup and restore). */
export const ApiKeyVersionRow = z
  .object({
    user_id: z.string(),
    version: z.number().int(),
    description: z.string(),
    scopes: z.string(),
    condition: z.string().nullable(),
    role: z.string().nullable(),
    disabled: z.number().int(),
    owner_user_id: z.string().nullable(),
    key_fingerprint: z.string(),
    action: z.string(),
    actor: z.string().nullable(),
    created_at: z.string(),
  })
  .strict();
export type ApiKeyVersionRow = z.infer<typeof ApiKeyVersionRow>;

const stored = KeyVersion.extend({ scopes: jsonColumn(z.array(z.string())), disabled: z.number().transform((n) => n !== 0) });
const COLUMNS = trusted("user_id, version, description, scopes, condition, role, disabled, owner_user_id, key_fingerprint, action, actor, created_at");

const snapshot = (action: KeyVersionAction, actor: string | null, now: string) => sql`INSERT INTO api_key_versions (${COLUMNS})
  SELECT k.user_id, (SELECT COALESCE(MAX(v.version), 0) + 1 FROM api_key_versions v WHERE v.user_id = k.user_id),
         k.description, k.scopes, k.condition, k.role, k.disabled, k.owner_user_id, k.key_fingerprint, ${action}, ${actor}, ${now}
  FROM api_keys k`;

/** Appends key `userId`'s current row as its next version (batch it with the change). */
export function snapshotKey(db: D1Database, userId: string, action: KeyVersionAction, actor: string | null, now: string): D1PreparedStatement {
  return d1(db)`${snapshot(action, actor, now)} WHERE k.user_id = ${userId}`.prepared();
}

/** Appends a version for every key `ownerId` owns (a revoke takes them along). */
export function snapshotOwnedKeys(db: D1Database, ownerId: string, action: KeyVersionAction, actor: string | null, now: string): D1PreparedStatement {
  return d1(db)`${snapshot(action, actor, now)} WHERE k.owner_user_id = ${ownerId}`.prepared();
}

/**
 * A page of `userId`'s history, newest first. With `since` (ISO-8601: a key's lineage start,
 * src/access-control/identity.ts), only the versions of that lineage: an earlier holder's history under the
 * same user_id is not part of it.
 */
export async function listKeyVersions(
  db: D1Database,
  userId: string,
  offset: number,
  limit: number,
  since?: string,
): Promise<{ items: KeyVersion[]; total: number }> {
  const from = since ?? "";
  const q = d1(db);
  const page = q`SELECT ${COLUMNS} FROM api_key_versions WHERE user_id = ${userId} AND created_at >= ${from} ORDER BY version DESC LIMIT ${limit} OFFSET ${offset}`;
  const counted = q`SELECT COUNT(*) AS n FROM api_key_versions WHERE user_id = ${userId} AND created_at >= ${from}`;
  const [rows, count] = await batch(db, [page, counted]);
  const [total] = rowsOf(CountRow, count?.results ?? [], counted.text);
  return { items: rowsOf(stored, rows?.results ?? [], page.text), total: total?.n ?? 0 };
}

export async function getKeyVersion(db: D1Database, userId: string, version: number): Promise<KeyVersion | null> {
  return first(stored, d1(db)`SELECT ${COLUMNS} FROM api_key_versions WHERE user_id = ${userId} AND version = ${version}`);
}
