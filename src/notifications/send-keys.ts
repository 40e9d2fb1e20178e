/**
 * The `Idempotency-Key`s of the notification send door (src/platform/http/idempotency.ts), kept in
 * a NotificationFeed object of their own per calling key (`sendKeysObject`), never in a feed's
 * ring: key → the fingerprint of its first request and, once that request was answered, the
 * answer. A retry with the same key and request answers that answer and sends nothing; the key on
 * another request is refused (422); a retry while the first request is still sending is 409.
 *
 * A send that failed (any refusal or provider error) releases its key, so the retry sends; a
 * request that died without releasing holds the key for `SEND_KEY_LEASE_MS` at most, past the
 * longest channel send, after which a retry claims it afresh. Rows are kept until their window
 * ends; the object's alarm deletes them then.
 */
import { type ObjectSchema, migrateSchema, objectSql } from "../platform/persistence/object-sql";
import type { KeyVerdict } from "../platform/http/idempotency";

const STORE = "notification-send-keys";

/** How long an unanswered claim holds its key: longer than a channel send may take. */
export const SEND_KEY_LEASE_MS = 5 * 60 * 1000;

/** The keys' table, created by the first claim. */
export const SEND_KEYS_SCHEMA: ObjectSchema = {
  name: STORE,
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS send_keys (
      key         TEXT PRIMARY KEY,
      fingerprint TEXT NOT NULL,
      answer      TEXT,
      claimed_at  INTEGER NOT NULL,
      expires_at  INTEGER NOT NULL
    ) WITHOUT ROWID`,
      "CREATE INDEX IF NOT EXISTS send_keys_expiry ON send_keys(expires_at)",
    ],
  ],
};

/** The object name that holds the send keys of calling key `scope` (its thread principal). */
export function sendKeysObject(scope: string): string {
  return `send-keys:${scope}`;
}

function keysExist(sql: SqlStorage): boolean {
  return objectSql(sql, STORE).one`SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = 'send_keys'` !== null;
}

/** Brings existing keys to the current schema (when the object starts); an object without keys stays empty. */
export function upgradeSendKeys(sql: SqlStorage): void {
  if (keysExist(sql)) migrateSchema(sql, SEND_KEYS_SCHEMA);
}

/**
 * Claims `key` for a request with `fingerprint`, or answers why not. Synchronous: the read and the
 * insert are one stretch of the object, so two requests with one key never both claim it.
 */
export function claimSendKey(sql: SqlStorage, key: string, fingerprint: string, nowMs: number, expiresAtMs: number): KeyVerdict<string> {
  migrateSchema(sql, SEND_KEYS_SCHEMA);
  const q = objectSql(sql, STORE);
  const row = q.one<{ fingerprint: string; answer: string | null; claimed_at: number }>`SELECT fingerprint, answer, claimed_at FROM send_keys
    WHERE key = ${key} AND expires_at > ${nowMs}`;
  if (row) {
    if (row.fingerprint !== fingerprint) return { kind: "reused" };
    if (row.answer !== null) return { kind: "replay", answer: row.answer };
    if (nowMs - row.claimed_at < SEND_KEY_LEASE_MS) return { kind: "in_flight" };
  }
  q.run`INSERT OR REPLACE INTO send_keys (key, fingerprint, answer, claimed_at, expires_at) VALUES (${key}, ${fingerprint}, NULL, ${nowMs}, ${expiresAtMs})`;
  return { kind: "new" };
}

/** The claimed request was answered `answer` (kept for retries), or failed (null: the key is released). */
export function settleSendKey(sql: SqlStorage, key: string, fingerprint: string, answer: string | null): void {
  if (!keysExist(sql)) return;
  const q = objectSql(sql, STORE);
  if (answer === null) q.run`DELETE FROM send_keys WHERE key = ${key} AND fingerprint = ${fingerprint} AND answer IS NULL`;
  else q.run`UPDATE send_keys SET answer = ${answer} WHERE key = ${key} AND fingerprint = ${fingerprint}`;
}

/** Deletes the keys whose window ended; answers the earliest remaining expiry (null: none left). */
export function pruneSendKeys(sql: SqlStorage, nowMs: number): number | null {
  if (!keysExist(sql)) return null;
  const q = objectSql(sql, STORE);
  q.run`DELETE FROM send_keys WHERE expires_at <= ${nowMs}`;
  return q.one<{ e: number | null }>`SELECT MIN(expires_at) AS e FROM send_keys`?.e ?? null;
}
