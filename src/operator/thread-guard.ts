/**
 * The thread-belongs-to-route guard of spec §4.6–§4.7, shared by every door that names a thread.
 *
 * Persons (`bridge:@person:{id}`) are not built in this project yet, so no person is on any route:
 * a person thread id answers 404 "person not found on this route", which is the spec's verdict for
 * a person thread off the named route.
 */
import { HttpError, badRequest } from "../http/errors";
import { parseThreadId } from "../bridge/thread-id";

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
export function threadAddress(door: "api" | "channel", rest: string): string {
  if (door === "channel") return rest;
  const slash = rest.indexOf("/");
  return slash >= 0 ? rest.slice(slash + 1) : rest;
}
