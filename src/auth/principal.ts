import { HttpError, forbidden, unauthorized } from "../http/errors";
import { conditionAllows, conditionInput } from "./condition";
import { constantTimeEqual, sha256Hex } from "./crypto";
import { type KeyRecord, keyWithOwnerByHash, parseKeyWithOwner } from "./key-store";
import { type Action, grantsRun, grantsTag, isAdminKey } from "./scopes";

/** The authenticated caller of a request. */
export interface Principal {
  key: KeyRecord;
  /** Owner's live record for an owned key; its scopes bound the key's (decisions §2). */
  owner: KeyRecord | null;
  admin: boolean;
  restricted: boolean;
}

/** Reads the credential from `x-api-key` or `Authorization: Bearer`. */
export function readCredential(headers: Headers): string | null {
  const k = headers.get("x-api-key");
  if (k && k.trim()) return k.trim();
  const auth = headers.get("authorization");
  const m = auth?.match(/^Bearer\s+(.+)$/i);
  return m ? m[1].trim() : null;
}

/**
 * Authenticates a raw key: 401 "Authentication required" when absent, 401 "Unauthorized" when
 * unknown, disabled, or owned by a missing/disabled owner. The stored hash is compared again in
 * constant time after the indexed lookup. The key and its owner come from one statement;
 * `prefetch` statements (a door's own first read) ride in the same D1 batch, so an
 * authenticated request costs one round trip before its handler runs.
 */
export async function authenticate(db: D1Database, credential: string | null, prefetch: D1PreparedStatement[] = []): Promise<Principal & { prefetched: D1Result[] }> {
  if (!credential) throw new HttpError(401, "Authentication required");
  const hash = await sha256Hex(credential);
  const [auth, ...prefetched] = await db.batch([keyWithOwnerByHash(db, hash), ...prefetch]);
  const found = parseKeyWithOwner(auth.results[0] as Record<string, unknown> | undefined);
  if (!found || !constantTimeEqual(found.key_hash, hash) || found.key.disabled) throw unauthorized();
  const { key, owner } = found;
  if (key.owner_user_id && (!owner || owner.disabled)) throw unauthorized();
  return { key, owner, admin: isAdminKey(key), restricted: owner !== null || key.owner_user_id !== null, prefetched };
}

/** What a route demands of its caller. */
export interface Requirement {
  tag: string;
  action: Action;
  admin?: boolean;
}

/** The effective grant check: own scopes, bounded by the owner's current scopes. */
export function principalGrantsTag(p: Principal, tag: string, action: Action): boolean {
  return grantsTag(p.key.scopes, tag, action) && (!p.owner || grantsTag(p.owner.scopes, tag, action));
}

export function principalGrantsRun(p: Principal, kind: "tool" | "agent", name: string): boolean {
  return grantsRun(p.key.scopes, kind, name) && (!p.owner || grantsRun(p.owner.scopes, kind, name));
}

/** Authorizes a request; any refusal is the generic 403. */
export async function authorize(p: Principal, need: Requirement, request: { method: string; path: string }, now: Date): Promise<void> {
  if (need.admin && !p.admin) throw forbidden();
  if (!principalGrantsTag(p, need.tag, need.action)) throw forbidden();
  if (p.key.condition && !(await conditionAllows(p.key.condition, conditionInput(p.key, now, request)))) {
    throw forbidden();
  }
}
