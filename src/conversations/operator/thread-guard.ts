/**
 * The thread-belongs-to-route guard of spec §4.6–§4.7, shared by every door that names a thread.
 *
 * A person thread (`bridge:@person:{id}`) is on a route when its person has an address that came in
 * on it (`guardThreadOnRoute`, which every door naming a thread uses). `guardThread` is its
 * synchronous part for route-keyed ids and answers 404 "person not found on this route" for every
 * person thread.
 */
import type { Route } from "../model/route";
import type { PersonView } from "../../persons/rpc";
import type { Door } from "../../shared/kinds";
import type { Env } from "../../platform/env";
import { HttpError, badRequest } from "../../platform/http/errors";
import { parseThreadId } from "../../shared/thread-id";
import { directoryOfPerson } from "../../persons/person-lookup";

export type GuardedThread = { thread_id: string; rest: string };

/** Checks `threadId` against `routeName`: blank or off-route 400, person 404. */
export function guardThread(routeName: string, threadId: string): GuardedThread {
  if (threadId.trim() === "") throw badRequest("invalid query: thread_id: must not be blank");
  const parsed = parseThreadId(threadId);
  if (parsed.kind === "person") throw new HttpError(404, "person not found on this route");
  if (parsed.kind === "invalid" || parsed.route_name !== routeName) {
    // The pattern, not the caller's route name: error messages never carry request text.
    throw badRequest("thread_id must be a thread of this route (starting bridge:{route_name}:)");
  }
  return { thread_id: threadId, rest: parsed.rest };
}

/**
 * The client address a route-keyed thread id names: a channel thread's rest is the address; an api
 * thread's rest is `{percent-encoded principal}/{external_user_id}` (the principal holds no `/`).
 */
export function threadAddress(door: Door, rest: string): string {
  if (door === "channel") return rest;
  const slash = rest.indexOf("/");
  return slash >= 0 ? rest.slice(slash + 1) : rest;
}

/**
 * `guardThread`, with person threads: a person thread passes when its person is on `routeName`
 * (one of its addresses came in on that route) and, when the door read the route, belongs to that
 * route's target; else 404 "person not found on this route". The forget door passes no route: it
 * works after the route itself was deleted.
 */
export async function guardThreadOnRoute(
  env: Env,
  routeName: string,
  threadId: string,
  route?: Pick<Route, "target_kind" | "target_name">,
): Promise<GuardedThread & { person: PersonView | null }> {
  const parsed = parseThreadId(threadId);
  if (parsed.kind !== "person") return { ...guardThread(routeName, threadId), person: null };
  const directory = await directoryOfPerson(env, parsed.person_id);
  const person = directory ? await directory.get(parsed.person_id) : null;
  const onRoute = person !== null && person.addresses.some((a) => a.routes.includes(routeName));
  const sameTarget = !route || (person !== null && person.target_kind === route.target_kind && person.target_name === route.target_name);
  if (!person || !onRoute || !sameTarget) throw new HttpError(404, "person not found on this route");
  return { thread_id: threadId, rest: "", person };
}
