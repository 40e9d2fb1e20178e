/**
 * A ConsoleHub's SQLite: the tickets waiting for their socket. A ticket row is deleted
 * by the socket that spends it, or by the next mint once expired, so the table holds at most the
 * tickets of the last TICKET_TTL_MS.
 */
import { constantTimeEqual } from "../access-control/crypto";
import { type ObjectSchema, migrateSchema, objectSql } from "../platform/persistence/object-sql";
import type { TicketHolder } from "./live-check";

/**
 * The `console-hub` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept. Version 2 keeps
 * the minting key's hash and the route with each ticket, so the socket can check the key again; a
 * ticket kept before it has neither and is refused.
 */
export const HUB_STORE_SCHEMA: ObjectSchema = {
  name: "console-hub",
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS tickets (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  )`,
    ],
    ["ALTER TABLE tickets ADD COLUMN key_hash TEXT", "ALTER TABLE tickets ADD COLUMN route_name TEXT"],
  ],
};

/** Brings the `console-hub` tables to their current version (idempotent). */
export function createHubStore(sql: SqlStorage): void {
  migrateSchema(sql, HUB_STORE_SCHEMA);
}

/** Keeps a ticket's hash and its holder until `expiresAtMs`, dropping the expired ones first. */
export function keepTicketRow(sql: SqlStorage, hash: string, holder: TicketHolder, expiresAtMs: number, nowMs: number): void {
  const q = objectSql(sql, HUB_STORE_SCHEMA.name);
  q.run`DELETE FROM tickets WHERE expires_at <= ${nowMs}`;
  q.run`INSERT OR REPLACE INTO tickets (hash, user_id, key_hash, route_name, expires_at)
    VALUES (${hash}, ${holder.user_id}, ${holder.key_hash}, ${holder.route_name}, ${expiresAtMs})`;
}

/**
 * Spends the ticket whose hash is `hash`: answers its holder, or null when it is unknown, expired,
 * already spent or kept without a holder. The row goes either way, so a ticket never works twice.
 */
export function spendTicketRow(sql: SqlStorage, hash: string, nowMs: number): TicketHolder | null {
  const row = objectSql(sql, HUB_STORE_SCHEMA.name).one<{
    hash: string;
    user_id: string;
    key_hash: string | null;
    route_name: string | null;
    expires_at: number;
  }>`DELETE FROM tickets WHERE hash = ${hash} RETURNING hash, user_id, key_hash, route_name, expires_at`;
  // The lookup is by index; the stored hash is compared again in constant time, as keys are.
  if (!row || !constantTimeEqual(row.hash, hash) || row.expires_at <= nowMs) return null;
  if (!row.key_hash || !row.route_name) return null;
  return { user_id: row.user_id, key_hash: row.key_hash, route_name: row.route_name };
}
