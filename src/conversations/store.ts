/** Conversation routes in D1 (spec §2.1, decisions §5). */
import { z } from "zod";
import { keyColumns, parsePrefixedKey } from "../access-control/key-store";
import { storedByUserIdSql } from "../access-control/stored-by";
import { NO_TARGET_FACTS, Route, RouteView, type RouteWithKey, type TargetFacts } from "./model/route";
import { TargetConversationConfig } from "../persons/target-configs";
import { BusinessHours } from "./business-hours";
import { HttpError } from "../platform/http/errors";
import { type Statement, all, batch, d1, exists, first, list, run, trusted } from "../platform/persistence/d1";
import { parseStored, validStored } from "../platform/persistence/stored-json";

/** The columns of `routes`, in the schema's order. */
const ROUTE_COLUMNS = Object.keys(Route.shape) as Array<keyof Route>;

/** The route, or the door's 404 "route not found". */
export async function requireRoute(db: D1Database, routeName: string): Promise<Route> {
  const route = await getRoute(db, routeName);
  if (!route) throw new HttpError(404, "route not found");
  return route;
}

/** Validates a raw `routes` row read elsewhere (e.g. in a batch). */
export function toRouteRow(r: unknown): Route {
  return toRow(r);
}

function toRow(r: unknown): Route {
  return validStored(Route, r, "routes row");
}

export function routeStatement(db: D1Database, routeName: string): D1PreparedStatement {
  return d1(db)`SELECT * FROM routes WHERE route_name = ${routeName}`.prepared();
}

export async function getRoute(db: D1Database, routeName: string): Promise<Route | null> {
  return first(Route, d1(db)`SELECT * FROM routes WHERE route_name = ${routeName}`);
}

/** The route joined with its execution key and owner, selected by where the clause points. */
/**
 * A multichannel target's routes whose initial_mode is manual, as JSON, in the door's read: a linked
 * person's thread defaults to manual when any of its routes is (spec §3.2), and the turn decides
 * that from this read. SQLite evaluates CASE lazily, so other targets never run the subquery.
 */
const MANUAL_ROUTES_OF_TARGET = `CASE WHEN json_extract(c.config, '$.multichannel') = 1 THEN
         (SELECT json_group_array(m.route_name) FROM routes m WHERE m.target_kind = r.target_kind AND m.target_name = r.target_name AND m.initial_mode = 'manual')
       END AS cfg_manual_routes,
       CASE WHEN json_extract(c.config, '$.state_binding') IS NOT NULL THEN
         (SELECT COUNT(*) FROM state_pending_saves p WHERE p.target_kind = r.target_kind AND p.target_name = r.target_name)
       END AS cfg_pending_saves`;

/**
 * The target config's writer (and owner) rides in the same statement: a config's state binding runs
 * bounded by the key that stored it (src/access-control/stored-by.ts), so the turn checks that key at no
 * extra round trip. SQLite evaluates CASE lazily, so configs without a binding join no key.
 */
const CONFIG_WRITER = `c.stored_by AS cfg_stored_by, ${keyColumns("ck", "cfg_k_")}, ${keyColumns("co", "cfg_o_")}`;

/**
 * The route's business hours (migrations/0031_business_hours.sql) ride in the same statement, so the
 * turn knows whether the route is open at no extra round trip; their triggers bump the route's and
 * its identity's epochs (migrations/0035_route_hours_identity.sql), like a change to the route.
 */
const ROUTE_HOURS = "(SELECT h.hours FROM route_hours h WHERE h.route_name = r.route_name) AS route_hours";

const ROUTE_WITH_KEY =
  trusted(`SELECT r.*, ${keyColumns("k", "k_")}, ${keyColumns("o", "o_")}, c.config AS cfg_config, ${CONFIG_WRITER}, ${MANUAL_ROUTES_OF_TARGET}, ${ROUTE_HOURS} FROM routes r
       LEFT JOIN api_keys k ON k.user_id = r.execution_key LEFT JOIN api_keys o ON o.user_id = k.owner_user_id
       LEFT JOIN conversation_configs c ON c.target_kind = r.target_kind AND c.target_name = r.target_name
       LEFT JOIN api_keys ck ON ck.user_id = (CASE WHEN json_extract(c.config, '$.state_binding') IS NOT NULL THEN ${storedByUserIdSql("c.stored_by")} END)
       LEFT JOIN api_keys co ON co.user_id = ck.owner_user_id`);

/**
 * The route joined with its execution key and that key's owner, in one statement: what the
 * message door reads (batched with the caller's key) so the turn that runs at once needs no
 * second read of either.
 */
export function routeWithKeyStatement(db: D1Database, routeName: string): D1PreparedStatement {
  return d1(db)`${ROUTE_WITH_KEY} WHERE r.route_name = ${routeName}`.prepared();
}

/**
 * The channel route that owns `(channel, ourIdentity)` with its execution key and owner, in one
 * statement: the channel door's read (through route-cache.ts), so the turn needs no second read.
 */
export async function readRouteWithKeyByChannelIdentity(db: D1Database, channel: string, ourIdentity: string): Promise<RouteWithKey> {
  const read = d1(db)`${ROUTE_WITH_KEY} WHERE r.channel = ${channel} AND r.our_identity = ${ourIdentity}`;
  // The joined row is parsed piece by piece (route, keys, target facts) by routeWithKeyFromResult.
  return routeWithKeyFromResult(await read.prepared().all());
}

/** Parses `routeWithKeyStatement`'s result (and the channel door's equivalent). */
export function routeWithKeyFromResult(result: D1Result | undefined): RouteWithKey {
  const r = result?.results?.[0] as Record<string, unknown> | undefined;
  if (!r) return { route: null, key: null, target: NO_TARGET_FACTS };
  const routeCols = Object.fromEntries(
    Object.entries(r).filter(([k]) => !k.startsWith("k_") && !k.startsWith("o_") && !k.startsWith("cfg_") && k !== "route_hours"),
  );
  const config = typeof r.cfg_config === "string" ? parseStored(TargetConversationConfig, r.cfg_config, "conversation config") : null;
  const manualRoutes = typeof r.cfg_manual_routes === "string" ? parseStored(RouteNames, r.cfg_manual_routes, "manual routes of target") : null;
  const pendingSaves = typeof r.cfg_pending_saves === "number" ? r.cfg_pending_saves : null;
  const hours = typeof r.route_hours === "string" ? parseStored(BusinessHours, r.route_hours, "route_hours hours") : null;
  const target: TargetFacts = { config, manualRoutes, pendingSaves, hours };
  if (config?.state_binding && typeof r.cfg_stored_by === "string")
    target.configWriter = { stored_by: r.cfg_stored_by, holder: parsePrefixedKey(r, "cfg_k_", "cfg_o_") };
  return { route: toRow(routeCols), key: parsePrefixedKey(r, "k_", "o_"), target };
}

const RouteNames = z.array(z.string());
const RouteNameRow = z.object({ route_name: z.string() });

/** The names of target (kind, name)'s routes whose initial_mode is manual (a person thread's default mode). */
export async function manualRoutesOfTarget(db: D1Database, kind: string, name: string): Promise<string[]> {
  const rows = await all(RouteNameRow, d1(db)`SELECT route_name FROM routes WHERE target_kind = ${kind} AND target_name = ${name} AND initial_mode = 'manual'`);
  return rows.map((r) => r.route_name);
}

export async function listRoutes(db: D1Database): Promise<Route[]> {
  return all(Route, d1(db)`SELECT * FROM routes ORDER BY route_name`);
}

export async function routeByChannelIdentity(db: D1Database, channel: string, ourIdentity: string): Promise<Route | null> {
  return first(Route, d1(db)`SELECT * FROM routes WHERE channel = ${channel} AND our_identity = ${ourIdentity}`);
}

export async function routeHasThreads(db: D1Database, routeName: string): Promise<boolean> {
  return exists(d1(db)`SELECT 1 AS one FROM threads WHERE route_name = ${routeName} LIMIT 1`);
}

/** The upsert statement: every column on insert; all but the key and `created_at` on conflict. */
const UPSERT_COLUMNS = trusted(ROUTE_COLUMNS.join(", "));
const UPSERT_UPDATES = trusted(
  ROUTE_COLUMNS.filter((c) => c !== "route_name" && c !== "created_at")
    .map((c) => `${c} = excluded.${c}`)
    .join(", "),
);

/**
 * The whole-row write (create or replace) as a statement: the route door runs it alone, a backup
 * import batches it with the rest of its routes section. A replaced route keeps its `created_at`
 * for both (thread objects stamp their mode overrides with it, see `deleteRoute`).
 */
export function upsertRouteStatement(db: D1Database, row: Route): D1PreparedStatement {
  return upsertRouteWrite(db, row).prepared();
}

function upsertRouteWrite(db: D1Database, row: Route): Statement {
  const stored = z.encode(Route, row);
  const values = list(ROUTE_COLUMNS.map((c) => stored[c]));
  return d1(db)`INSERT INTO routes (${UPSERT_COLUMNS}) VALUES (${values}) ON CONFLICT(route_name) DO UPDATE SET ${UPSERT_UPDATES}`;
}

/** Writes the whole row (create or replace). */
export async function upsertRoute(db: D1Database, row: Route): Promise<void> {
  await run(upsertRouteWrite(db, row));
}

/**
 * Deletes the route with its thread index entries (records keep their TTL). Per-thread mode
 * overrides live in thread objects, stamped with the route's `created_at`: deleting the route
 * voids them at once, and each object reclaims its stale override on its next read.
 */
export async function deleteRoute(db: D1Database, routeName: string): Promise<boolean> {
  const [res] = await batch(db, [d1(db)`DELETE FROM routes WHERE route_name = ${routeName}`, d1(db)`DELETE FROM threads WHERE route_name = ${routeName}`]);
  return (res.meta.changes ?? 0) > 0;
}

/** The public view of `r`: a projection through `RouteView` (zod drops every key it does not name, the secret first). */
export function routeView(r: Route): RouteView {
  return RouteView.parse(r);
}
