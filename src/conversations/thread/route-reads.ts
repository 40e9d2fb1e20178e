/**
 * When a thread reads its route (spec §2.1, decisions §5). One rule, stated here once:
 *
 * 1. A turn reads its route once, right before it runs. The door's read stands in for it while
 *    that read is younger than ROUTE_SNAPSHOT_MS (the message door reads the route with its
 *    execution key); otherwise the turn reads it through the route cache (`turnReads`,
 *    src/conversations/route-cache.ts: its access epoch is checked, and D1 is read only when a
 *    write changed the route since the isolate last read it). Everything the turn decides comes from that read: the target and its
 *    expressions, the route incarnation a mode override belongs to, the execution key it runs as.
 *    (The key itself is re-read live at each later authorization: src/access-control, not a route read.)
 * 2. Delivery sends what the record carries: door, channel, address, answer, rich part, chunk
 *    progress, attempts.
 * 3. Each delivery attempt reads the route (`deliveryRoute`), because that is where revocation
 *    takes effect: a deleted route fails the record ("the route was deleted before delivery"); a
 *    re-posted route mints a new callback secret and the old one is gone, so the callback goes to
 *    the route's current `callback_url` signed with its current secret (which is never copied into
 *    thread storage); a route that dropped its callback completes the record as poll-delivered;
 *    and a channel sends from the route's current identity, which a re-post may have released.
 *    The thread's latest route read (its door's or its turn's, memory only) stands in for that
 *    read while it is younger than ROUTE_SNAPSHOT_MS, so the first attempt right after a turn
 *    costs not even an epoch check; a retry after backoff reads through the route cache. A route
 *    deleted or re-posted therefore reaches deliveries within ROUTE_SNAPSHOT_MS, as it reaches turns.
 *
 * A turn therefore costs at most one route read, and a delivery attempt at most one; in steady
 * state neither reaches D1.
 */
import type { KeyWithOwner } from "../../access-control/key-store";
import type { Env } from "../../platform/env";
import { routeWithKey } from "../route-cache";
import type { Route, TargetFacts } from "../model/route";

/** How old a door's route read may be and still stand in for the turn's own read. */
export const ROUTE_SNAPSHOT_MS = 2000;

/** A route as a door read it, with its execution key (undefined: the key was not read) and when. */
export interface RouteSnapshot {
  route: Route;
  key: KeyWithOwner | null | undefined;
  at: number;
  /** What the read learned about the route's target (undefined: not read). */
  target?: TargetFacts;
}

/** Everything a turn decides from: the route, its key and its target's facts. */
export interface TurnRead {
  route: Route;
  /** undefined: not read (the authorizer reads it live). */
  key: KeyWithOwner | null | undefined;
  target: TargetFacts;
}

/**
 * The doors' route reads a thread holds for its queued turns, by message id. Memory only: a turn
 * that runs after a restart reads afresh, as does one that waited past ROUTE_SNAPSHOT_MS.
 *
 * Bound: one entry per queued turn (at most `thread_queue_depth`). Eviction: the turn takes its
 * entry when it runs; an entry whose turn ran before its accept filed it, or whose record was
 * forgotten while queued, is dropped by `keepOnly` when the thread's queue runs empty.
 */
export class RouteSnapshots {
  private readonly byMessage = new Map<string, RouteSnapshot>();

  /** Entries held (tests, and the bound above). */
  get size(): number {
    return this.byMessage.size;
  }

  /** Drops every entry whose message `queued` denies (the turn loop's sweep). */
  keepOnly(queued: (messageId: string) => boolean): void {
    for (const id of this.byMessage.keys()) if (!queued(id)) this.byMessage.delete(id);
  }
  /** The newest route read this thread saw (rule 3). */
  private latest: { route: Route; at: number } | null = null;

  /** Keeps the door's read for the turn of `messageId`. */
  remember(messageId: string, snapshot: RouteSnapshot): void {
    this.byMessage.set(messageId, snapshot);
    this.noteRead(snapshot.route, snapshot.at);
  }

  /** A route read made at `at` (a door's or a turn's own), for the deliveries that follow (rule 3). */
  noteRead(route: Route, at: number): void {
    if (!this.latest || at >= this.latest.at) this.latest = { route, at };
  }

  /** Rule 3: the latest read of `routeName` while it is fresh at `nowMs`. */
  freshRoute(routeName: string, nowMs: number): Route | undefined {
    const l = this.latest;
    return l && l.route.route_name === routeName && nowMs - l.at < ROUTE_SNAPSHOT_MS ? l.route : undefined;
  }

  /** Hands the turn its door's read once, and only while it is fresh at `nowMs`. */
  take(messageId: string, nowMs: number): RouteSnapshot | undefined {
    const snap = this.byMessage.get(messageId);
    this.byMessage.delete(messageId);
    return snap && nowMs - snap.at < ROUTE_SNAPSHOT_MS ? snap : undefined;
  }
}

/**
 * Rule 1: what a turn reads right before it runs: nothing when its door read the route with its
 * key and the target's config moments ago, else the route joined with its key, owner, config and
 * (multichannel targets) manual routes, through the route cache. null: the route is gone.
 */
export async function turnReads(env: Env, routeName: string, fresh: RouteSnapshot | undefined): Promise<TurnRead | null> {
  if (fresh && fresh.key !== undefined && fresh.target !== undefined) return { route: fresh.route, key: fresh.key, target: fresh.target };
  const r = await routeWithKey(env, routeName);
  return r.route ? { route: r.route, key: r.key, target: r.target } : null;
}

/** Rule 3: a delivery attempt's route: the thread's fresh read if it has one, else the route cache (null: the route was deleted). */
export async function deliveryRoute(env: Env, routeName: string, fresh: Route | undefined): Promise<Route | null> {
  return fresh ?? (await routeWithKey(env, routeName)).route;
}
