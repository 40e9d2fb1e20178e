/**
 * The ConnectorConnection object's SQLite: one row holding the connection's tokens,
 * sealed (src/connectors/sealing.ts), with what the object decides on without opening them: the
 * access token's expiry, whether a refresh token exists, and the health of the last refresh.
 * Plain synchronous functions over `SqlStorage`, so a caller's check-then-write is one block.
 */
import { z } from "zod";
import type { ConnectionHealth } from "./rpc";
import { type Sealed, parseSealed } from "./sealing";
import { type ObjectSchema, migrateSchema, objectSql } from "../platform/persistence/object-sql";

/** The store's name in its statements' errors. */
const STORE = "connector-tokens";

/** The secret part of a grant: what is sealed, and read back through this schema once unsealed. */
export const TokenSecrets = z.object({ access_token: z.string(), refresh_token: z.string().nullable(), token_type: z.string().nullable() });
export type TokenSecrets = z.infer<typeof TokenSecrets>;

export interface TokenRow {
  connection_id: string;
  provider_id: string;
  sealed: Sealed;
  /** Epoch ms; null when the provider gave no expiry. */
  expires_at: number | null;
  refreshable: boolean;
  granted_scope: string | null;
  status: "ok" | "reconnect_required";
  last_error: string | null;
  last_refreshed_at: number | null;
  /** Bumped by every write of the tokens: a refresh or re-seal that raced an install stands down. */
  generation: number;
}

/**
 * The `connector-tokens` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const TOKEN_SCHEMA: ObjectSchema = {
  name: "connector-tokens",
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS tokens (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    connection_id TEXT NOT NULL, provider_id TEXT NOT NULL, sealed TEXT NOT NULL,
    expires_at INTEGER, refreshable INTEGER NOT NULL, granted_scope TEXT,
    status TEXT NOT NULL, last_error TEXT, last_refreshed_at INTEGER,
    generation INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
    ],
  ],
};

/** Brings the `connector-tokens` tables to their current version (idempotent). */
export function createTokenTables(sql: SqlStorage): void {
  migrateSchema(sql, TOKEN_SCHEMA);
}

type Raw = {
  connection_id: string;
  provider_id: string;
  sealed: string;
  expires_at: number | null;
  refreshable: number;
  granted_scope: string | null;
  status: string;
  last_error: string | null;
  last_refreshed_at: number | null;
  generation: number;
};

export function readTokens(sql: SqlStorage): TokenRow | null {
  const r = objectSql(sql, STORE).one<Raw>`
    SELECT connection_id, provider_id, sealed, expires_at, refreshable, granted_scope, status, last_error, last_refreshed_at, generation FROM tokens WHERE one = 1`;
  if (!r) return null;
  const sealed = parseSealed(r.sealed);
  if (!sealed) throw new Error("connector tokens row holds an unreadable sealed value");
  return {
    connection_id: r.connection_id,
    provider_id: r.provider_id,
    sealed,
    expires_at: r.expires_at === null ? null : Number(r.expires_at),
    refreshable: Number(r.refreshable) === 1,
    granted_scope: r.granted_scope,
    status: r.status === "reconnect_required" ? "reconnect_required" : "ok",
    last_error: r.last_error,
    last_refreshed_at: r.last_refreshed_at === null ? null : Number(r.last_refreshed_at),
    generation: Number(r.generation),
  };
}

/** Writes the whole row (an install, a refresh, a re-seal), bumping the generation. */
export function writeTokens(sql: SqlStorage, row: Omit<TokenRow, "generation">, nowMs: number): void {
  objectSql(sql, STORE).run`
    INSERT INTO tokens (one, connection_id, provider_id, sealed, expires_at, refreshable, granted_scope, status, last_error, last_refreshed_at, generation, updated_at)
    VALUES (1, ${row.connection_id}, ${row.provider_id}, ${JSON.stringify(row.sealed)}, ${row.expires_at}, ${row.refreshable ? 1 : 0}, ${row.granted_scope},
      ${row.status}, ${row.last_error}, ${row.last_refreshed_at}, 1, ${nowMs})
     ON CONFLICT (one) DO UPDATE SET connection_id = excluded.connection_id, provider_id = excluded.provider_id, sealed = excluded.sealed,
       expires_at = excluded.expires_at, refreshable = excluded.refreshable, granted_scope = excluded.granted_scope, status = excluded.status,
       last_error = excluded.last_error, last_refreshed_at = excluded.last_refreshed_at, generation = tokens.generation + 1, updated_at = excluded.updated_at`;
}

/** Records a failed refresh: `reconnect` when the provider refused it for good. */
export function markRefreshFailure(sql: SqlStorage, message: string, reconnect: boolean, nowMs: number): void {
  objectSql(sql, STORE).run`UPDATE tokens SET last_error = ${message}, status = CASE WHEN ${reconnect ? 1 : 0} THEN 'reconnect_required' ELSE status END,
    updated_at = ${nowMs} WHERE one = 1`;
}

/** The health a view shows for `row` at `nowMs`. */
export function healthOf(row: TokenRow | null, nowMs: number): ConnectionHealth {
  if (!row) return { status: "missing", access_token_expires_at: null, refreshable: false, last_refreshed_at: null, last_error: null, granted_scope: null };
  const expired = row.expires_at !== null && row.expires_at <= nowMs;
  const status = row.status === "reconnect_required" ? "reconnect_required" : expired && !row.refreshable ? "expired" : "connected";
  return {
    status,
    access_token_expires_at: row.expires_at === null ? null : new Date(row.expires_at).toISOString(),
    refreshable: row.refreshable,
    last_refreshed_at: row.last_refreshed_at === null ? null : new Date(row.last_refreshed_at).toISOString(),
    last_error: row.last_error,
    granted_scope: row.granted_scope,
  };
}

/** The additional authenticated data of a connection's sealed tokens. */
export function tokensAad(connectionId: string): string {
  return `connector-tokens:${connectionId}`;
}
