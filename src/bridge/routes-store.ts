/** Conversation routes in D1 (spec §2.1, decisions §5). */
import { z } from "zod";
import { HttpError } from "../http/errors";
import { type KeyWithOwner, keyColumns, parsePrefixedKey } from "../auth/key-store";

export interface RouteRow {
  route_name: string;
  door: "api" | "channel";
  target_kind: "agent" | "tool";
  target_name: string;
  execution_key: string;
  execution_key_fingerprint: string;
  payload_expr: unknown;
  payload_program: string | null;
  reply_expr: unknown;
  reply_program: string | null;
  initial_mode: "agent" | "manual";
  channel: string | null;
  our_identity: string | null;
  callback_url: string | null;
  callback_secret: string | null;
  turns_per_hour_override: number | null;
  created_at: string;
  updated_at: string;
}

const jsonText = z
  .string()
  .nullable()
  .transform((s) => (s === null ? null : (JSON.parse(s) as unknown)));

const rowSchema = z.object({
  route_name: z.string(),
  door: z.enum(["api", "channel"]),
  target_kind: z.enum(["agent", "tool"]),
  target_name: z.string(),
  execution_key: z.string(),
  execution_key_fingerprint: z.string(),
  payload_expr: jsonText,
  payload_program: z.string().nullable(),
  reply_expr: jsonText,
  reply_program: z.string().nullable(),
  initial_mode: z.enum(["agent", "manual"]),
  channel: z.string().nullable(),
  our_identity: z.string().nullable(),
  callback_url: z.string().nullable(),
  callback_secret: z.string().nullable(),
  turns_per_hour_override: z.number().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** The route, or the door's 404 "route not found". */
export async function requireRoute(db: D1Database, routeName: string): Promise<RouteRow> {
  const route = await getRoute(db, routeName);
  if (!route) throw new HttpError(404, "route not found");
  return route;
}

/** Validates a raw `routes` row read elsewhere (e.g. in a batch). */
export function toRouteRow(r: unknown): RouteRow {
  return toRow(r);
}

function toRow(r: unknown): RouteRow {
  const parsed = rowSchema.safeParse(r);
  if (!parsed.success) throw new Error("routes row failed validation");
  return parsed.data as RouteRow;
}

export function routeStatement(db: D1Database, routeName: string): D1PreparedStatement {
  return db.prepare("SELECT * FROM routes WHERE route_name = ?").bind(routeName);
}

export async function getRoute(db: D1Database, routeName: string): Promise<RouteRow | null> {
  const r = await routeStatement(db, routeName).first();
  return r ? toRow(r) : null;
}

/**
 * The route joined with its execution key and that key's owner, in one statement: what the
 * message door reads (batched with the caller's key) so the turn that runs at once needs no
 * second read of either.
 */
export function routeWithKeyStatement(db: D1Database, routeName: string): D1PreparedStatement {
  return db
    .prepare(
      `SELECT r.*, ${keyColumns("k", "k_")}, ${keyColumns("o", "o_")} FROM routes r
       LEFT JOIN api_keys k ON k.user_id = r.execution_key LEFT JOIN api_keys o ON o.user_id = k.owner_user_id
       WHERE r.route_name = ?`,
    )
    .bind(routeName);
}

/** Parses `routeWithKeyStatement`'s result: the route (null when absent) and its key (null when gone). */
export function routeWithKeyFromResult(result: D1Result | undefined): { route: RouteRow | null; key: KeyWithOwner | null } {
  const r = result?.results?.[0] as Record<string, unknown> | undefined;
  if (!r) return { route: null, key: null };
  const routeCols = Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith("k_") && !k.startsWith("o_")));
  return { route: toRow(routeCols), key: parsePrefixedKey(r, "k_", "o_") };
}

/** The route from a batched `routeStatement` result; null when absent (or not batched). */
export function routeFromResult(result: D1Result | undefined): RouteRow | null {
  const r = result?.results?.[0];
  return r ? toRow(r) : null;
}

export async function listRoutes(db: D1Database): Promise<RouteRow[]> {
  const { results } = await db.prepare("SELECT * FROM routes ORDER BY route_name").all();
  return results.map(toRow);
}

export async function routeByChannelIdentity(db: D1Database, channel: string, ourIdentity: string): Promise<RouteRow | null> {
  const r = await db.prepare("SELECT * FROM routes WHERE channel = ? AND our_identity = ?").bind(channel, ourIdentity).first();
  return r ? toRow(r) : null;
}

export async function routeHasThreads(db: D1Database, routeName: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 AS one FROM threads WHERE route_name = ? LIMIT 1").bind(routeName).first()) !== null;
}

/** Writes the whole row (create or replace). */
export async function upsertRoute(db: D1Database, row: RouteRow): Promise<void> {
  await db
    .prepare(
      `INSERT INTO routes (route_name, door, target_kind, target_name, execution_key, execution_key_fingerprint,
         payload_expr, payload_program, reply_expr, reply_program, initial_mode, channel, our_identity,
         callback_url, callback_secret, turns_per_hour_override, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(route_name) DO UPDATE SET
         door = excluded.door, target_kind = excluded.target_kind, target_name = excluded.target_name,
         execution_key = excluded.execution_key, execution_key_fingerprint = excluded.execution_key_fingerprint,
         payload_expr = excluded.payload_expr, payload_program = excluded.payload_program,
         reply_expr = excluded.reply_expr, reply_program = excluded.reply_program,
         initial_mode = excluded.initial_mode, channel = excluded.channel, our_identity = excluded.our_identity,
         callback_url = excluded.callback_url, callback_secret = excluded.callback_secret,
         turns_per_hour_override = excluded.turns_per_hour_override, updated_at = excluded.updated_at`,
    )
    .bind(
      row.route_name,
      row.door,
      row.target_kind,
      row.target_name,
      row.execution_key,
      row.execution_key_fingerprint,
      row.payload_expr === null ? null : JSON.stringify(row.payload_expr),
      row.payload_program,
      row.reply_expr === null ? null : JSON.stringify(row.reply_expr),
      row.reply_program,
      row.initial_mode,
      row.channel,
      row.our_identity,
      row.callback_url,
      row.callback_secret,
      row.turns_per_hour_override,
      row.created_at,
      row.updated_at,
    )
    .run();
}

/**
 * Deletes the route with its thread index entries (records keep their TTL). Per-thread mode
 * overrides live in thread objects, stamped with the route's `created_at`: deleting the route
 * voids them at once, and each object reclaims its stale override on its next read.
 */
export async function deleteRoute(db: D1Database, routeName: string): Promise<boolean> {
  const [res] = await db.batch([
    db.prepare("DELETE FROM routes WHERE route_name = ?").bind(routeName),
    db.prepare("DELETE FROM threads WHERE route_name = ?").bind(routeName),
  ]);
  return (res.meta.changes ?? 0) > 0;
}

/** The public view: never the secret (not even null), always the fingerprint. */
export function routeView(r: RouteRow): Record<string, unknown> {
  return {
    route_name: r.route_name,
    door: r.door,
    target_kind: r.target_kind,
    target_name: r.target_name,
    execution_key: r.execution_key,
    execution_key_fingerprint: r.execution_key_fingerprint,
    payload_expr: r.payload_expr,
    reply_expr: r.reply_expr,
    initial_mode: r.initial_mode,
    channel: r.channel,
    our_identity: r.our_identity,
    callback_url: r.callback_url,
    turns_per_hour_override: r.turns_per_hour_override,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
