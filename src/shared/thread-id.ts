/**
 * Thread ids (decisions §6), pure:
 *   channel  bridge:{route}:{client_address}
 *   api      bridge:{route}:{P}/{U}   P = caller user_id percent-encoded, U = external_user_id trimmed
 *   person   bridge:@person:{person_id}
 * Ids contain `:` and `/`, so they travel in query strings, never in paths.
 */

/** Percent-encodes everything outside `A-Za-z0-9_.-~` (UTF-8 bytes, uppercase hex). */
export function encodePrincipal(userId: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(userId)) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9_.~-]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

export function routePrefix(routeName: string): string {
  return `bridge:${routeName}:`;
}

export function apiThreadId(routeName: string, callerUserId: string, externalUserId: string): string {
  return `${routePrefix(routeName)}${encodePrincipal(callerUserId)}/${externalUserId.trim()}`;
}

export function channelThreadId(routeName: string, clientAddress: string): string {
  return `${routePrefix(routeName)}${clientAddress.trim()}`;
}

export const PERSON_PREFIX = "bridge:@person:";

export function personThreadId(personId: string): string {
  return `${PERSON_PREFIX}${personId}`;
}

export type ParsedThreadId = { kind: "route"; route_name: string; rest: string } | { kind: "person"; person_id: string } | { kind: "invalid" };

/** Splits a thread id into its parts; anything not starting `bridge:` with a non-empty rest is invalid. */
export function parseThreadId(threadId: string): ParsedThreadId {
  if (threadId.startsWith(PERSON_PREFIX)) {
    const person_id = threadId.slice(PERSON_PREFIX.length);
    return person_id ? { kind: "person", person_id } : { kind: "invalid" };
  }
  const m = threadId.match(/^bridge:([a-z0-9][a-z0-9-]{0,62}):(.+)$/s);
  return m ? { kind: "route", route_name: m[1], rest: m[2] } : { kind: "invalid" };
}

/** Does a route-keyed thread id belong to `routeName`? (the thread-belongs-to-route guard) */
export function belongsToRoute(threadId: string, routeName: string): boolean {
  const p = parseThreadId(threadId);
  return p.kind === "route" && p.route_name === routeName;
}
