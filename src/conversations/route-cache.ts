/**
 * Routes as the doors and the thread objects read them: the route joined with its execution key,
 * its target's config and that config's writer (`routeWithKeyStatement`), from the isolate cache
 * while the route's access epoch is unchanged (src/platform/epochs), else from D1. Every write
 * that changes what the joined read returns bumps the epoch before the writing request answers
 * (migrations/0026_access_changes.sql lists them), so a route change is seen on the next message,
 * and a steady route costs no D1 round trip.
 */
import { EpochCache } from "../platform/epochs/cache";
import type { Env } from "../platform/env";
import { HttpError } from "../platform/http/errors";
import { NO_TARGET_FACTS, type Route, type RouteWithKey } from "./model/route";
import { readRouteWithKeyByChannelIdentity, routeWithKeyFromResult, routeWithKeyStatement } from "./store";

const byName = new EpochCache<RouteWithKey>(2048);
const byIdentity = new EpochCache<RouteWithKey>(2048);

const MISSING: RouteWithKey = Object.freeze({ route: null, key: null, target: NO_TARGET_FACTS });

/** The route named `routeName` with its key and target facts (`route` null: no such route). */
export async function routeWithKey(env: Env, routeName: string): Promise<RouteWithKey> {
  const found = await byName.get(env, `route:${routeName}`, async () => {
    const r = routeWithKeyFromResult(await routeWithKeyStatement(env.DB, routeName).all());
    return r.route ? r : null;
  });
  return found ?? MISSING;
}

/** The channel route that owns `(channel, ourIdentity)`, with its key and target facts. */
export async function routeWithKeyByChannelIdentity(env: Env, channel: string, ourIdentity: string): Promise<RouteWithKey> {
  const found = await byIdentity.get(env, `ident:${channel}:${ourIdentity}`, async () => {
    const r = await readRouteWithKeyByChannelIdentity(env.DB, channel, ourIdentity);
    return r.route ? r : null;
  });
  return found ?? MISSING;
}

/** The route named `routeName`, or the doors' 404 "route not found". */
export async function requireCachedRoute(env: Env, routeName: string): Promise<Route> {
  const { route } = await routeWithKey(env, routeName);
  if (!route) throw new HttpError(404, "route not found");
  return route;
}
