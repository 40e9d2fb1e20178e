/**
 * The connections listing (D1 `connector_connections`) and the connection view (docs/connectors.md
 * "Connections"). The listing holds who owns a connection, its provider, its sub-services and the
 * scopes asked for; the tokens and their health live in the connection's own object, which the
 * view asks for its health. No view ever carries a token.
 *
 * Who sees what: an admin sees and manages every connection; any other caller only the
 * connections it started itself: its key's `user_id` owns them, and they were made in its key's
 * lineage (src/access-control/identity.ts), so a user_id issued again inherits none of them. Another's
 * connection reads as absent (404), so its existence is not revealed.
 */
import { z } from "zod";
import { heldBy } from "../access-control/identity";
import { CountRow, type SqlFragment, all, batch, d1, first, join, list, rowsOf, run, sql, trusted } from "../platform/persistence/d1";
import type { ConnectionHealth } from "./rpc";

export interface ConnectionRow {
  connection_id: string;
  owner_user_id: string;
  provider_id: string;
  sub_services: string[];
  scopes: string[];
  created_at: string;
  updated_at: string;
}

export interface Caller {
  user_id: string;
  admin: boolean;
  /** When the caller's lineage began (ISO-8601): what is older was another holder's. */
  since: string;
}

export const HealthView = z.object({
  status: z.enum(["connected", "expired", "reconnect_required", "missing"]),
  access_token_expires_at: z.string().nullable(),
  refreshable: z.boolean(),
  last_refreshed_at: z.string().nullable(),
  last_error: z.string().nullable(),
  granted_scope: z.string().nullable(),
});

export const ConnectionView = z.object({
  connection_id: z.string(),
  provider_id: z.string(),
  owner_user_id: z.string(),
  sub_services: z.array(z.string()),
  scopes: z.array(z.string()),
  health: HealthView,
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConnectionView = z.infer<typeof ConnectionView>;

/** The view of a row with its object's health: picked field by field. */
export function connectionView(row: ConnectionRow, health: ConnectionHealth): ConnectionView {
  return {
    connection_id: row.connection_id,
    provider_id: row.provider_id,
    owner_user_id: row.owner_user_id,
    sub_services: [...row.sub_services],
    scopes: [...row.scopes],
    health: {
      status: health.status,
      access_token_expires_at: health.access_token_expires_at,
      refreshable: health.refreshable,
      last_refreshed_at: health.last_refreshed_at,
      last_error: health.last_error,
      granted_scope: health.granted_scope,
    },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function visibleTo(row: ConnectionRow, caller: Caller): boolean {
  return caller.admin || heldBy(caller, row.owner_user_id, row.created_at);
}

/** A stored row: the two lists are JSON text. */
const Raw = z.object({
  connection_id: z.string(),
  owner_user_id: z.string(),
  provider_id: z.string(),
  sub_services: z.string(),
  scopes: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
type Raw = z.infer<typeof Raw>;

const COLUMNS = trusted("connection_id, owner_user_id, provider_id, sub_services, scopes, created_at, updated_at");

function stringList(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : [];
  } catch {
    return [];
  }
}

function toRow(r: Raw): ConnectionRow {
  return { ...r, sub_services: stringList(r.sub_services), scopes: stringList(r.scopes) };
}

export async function getConnection(db: D1Database, connectionId: string): Promise<ConnectionRow | null> {
  const r = await first(Raw, d1(db)`SELECT ${COLUMNS} FROM connector_connections WHERE connection_id = ${connectionId}`);
  return r ? toRow(r) : null;
}

/** A page of the connections `caller` may see (oldest first), with the full count. */
export async function listConnections(
  db: D1Database,
  caller: Caller,
  filter: { provider_id?: string; owner_user_id?: string },
  limit: number,
): Promise<{ rows: ConnectionRow[]; total: number }> {
  const where: SqlFragment[] = [];
  if (!caller.admin) where.push(sql`owner_user_id = ${caller.user_id} AND created_at >= ${caller.since}`);
  if (filter.owner_user_id !== undefined) where.push(sql`owner_user_id = ${filter.owner_user_id}`);
  if (filter.provider_id !== undefined) where.push(sql`provider_id = ${filter.provider_id}`);
  const clause = where.length ? sql` WHERE ${join(where, " AND ")}` : sql``;
  const q = d1(db);
  const stmts = [
    q`SELECT ${COLUMNS} FROM connector_connections${clause} ORDER BY created_at, rowid LIMIT ${limit}`,
    q`SELECT COUNT(*) AS n FROM connector_connections${clause}`,
  ];
  const [page, count] = await batch(db, stmts);
  const [n] = rowsOf(CountRow, count?.results ?? [], stmts[1]?.text ?? "");
  return { rows: rowsOf(Raw, page?.results ?? [], stmts[0]?.text ?? "").map(toRow), total: n?.n ?? 0 };
}

export async function insertConnection(db: D1Database, row: ConnectionRow): Promise<void> {
  await run(
    d1(db)`INSERT INTO connector_connections (${COLUMNS}) VALUES (${row.connection_id}, ${row.owner_user_id}, ${row.provider_id},
      ${JSON.stringify(row.sub_services)}, ${JSON.stringify(row.scopes)}, ${row.created_at}, ${row.updated_at})`,
  );
}

/** Sets a connection's sub-services and scopes; null when it no longer exists. */
export async function updateConnection(
  db: D1Database,
  connectionId: string,
  subServices: string[],
  scopes: string[],
  nowIso: string,
): Promise<ConnectionRow | null> {
  const r = await first(
    Raw,
    d1(db)`UPDATE connector_connections SET sub_services = ${JSON.stringify(subServices)}, scopes = ${JSON.stringify(scopes)}, updated_at = ${nowIso}
      WHERE connection_id = ${connectionId} RETURNING ${COLUMNS}`,
  );
  return r ? toRow(r) : null;
}

/** Removes a connection's listing row and its open authorizations; false when it was not listed. */
export async function deleteConnection(db: D1Database, connectionId: string): Promise<boolean> {
  const q = d1(db);
  const [res] = await batch(db, [
    q`DELETE FROM connector_connections WHERE connection_id = ${connectionId}`,
    q`DELETE FROM connector_oauth_starts WHERE connection_id = ${connectionId}`,
  ]);
  return (res?.meta.changes ?? 0) > 0;
}

const IdRow = z.object({ connection_id: z.string() });
const ProviderRow = z.object({ connection_id: z.string(), provider_id: z.string() });

/** Connection ids after `cursor` (ordered), for walks over every connection (re-sealing). */
export async function connectionIdsAfter(db: D1Database, cursor: string, limit: number): Promise<string[]> {
  const rows = await all(IdRow, d1(db)`SELECT connection_id FROM connector_connections WHERE connection_id > ${cursor} ORDER BY connection_id LIMIT ${limit}`);
  return rows.map((r) => r.connection_id);
}

/** The provider of each of `ids` that is a listed connection (connection id → provider id). */
export async function connectionProviders(db: D1Database, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await all(ProviderRow, d1(db)`SELECT connection_id, provider_id FROM connector_connections WHERE connection_id IN (${list(ids)})`);
  return new Map(rows.map((r) => [r.connection_id, r.provider_id]));
}
