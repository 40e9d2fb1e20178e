import { HttpError, forbidden, unauthorized } from "../platform/http/errors";
import type { TargetKind } from "../shared/kinds";
import { type ConditionInput, type ConditionThread, conditionAllows, conditionInput, conditionNeedsRequest, conditionNeedsThread } from "./condition";
import { constantTimeEqual, sha256Hex } from "./crypto";
import { keyAllowsRoute, keyAllowsTag, keyConditions, keyRunRefusal } from "./key-grants";
import type { KeyRecord } from "./key-store";
import { keyByHash } from "./key-cache";
import type { Env } from "../platform/env";
import { type DoorDeclaration, isPinned, pinRefusal } from "./public-routes";
import { type Action, isAdminKey } from "./scopes";

export type { DoorDeclaration } from "./public-routes";

/** The authenticated caller of a request. */
export interface Principal {
  key: KeyRecord;
  /** Owner's live record for an owned key; its scopes and role bound the key's (decisions §2). */
  owner: KeyRecord | null;
  admin: boolean;
  restricted: boolean;
  /** No credential: a door pinned public let the request in (docs/access-control.md). */
  anonymous?: true;
}

/**
 * The caller of a pinned door reached without a credential: no scopes, no owner, restricted (so a
 * handler that narrows to "own" data narrows to nothing), and a user_id no key can have (the
 * user_id grammar has no parentheses), so nothing it touches can be mistaken for a key's.
 */
export const ANONYMOUS: Principal = Object.freeze({
  key: Object.freeze({
    user_id: "(public)",
    description: "",
    scopes: [],
    condition: null,
    owner_user_id: null,
    disabled: false,
    key_fingerprint: "",
    created_at: "",
    updated_at: "",
    role: null,
    role_def: null,
    scope_urls: [],
    generation: 0,
  }) as KeyRecord,
  owner: null,
  admin: false,
  restricted: true,
  anonymous: true,
}) as Principal;

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
 * constant time after the lookup. The key, its owner, both roles and the URLs of their custom
 * scopes come from one D1 statement, which the isolate's key cache answers while the key's
 * access epoch is unchanged (src/access-control/key-cache.ts), so a steady caller costs no round trip.
 */
export async function authenticate(env: Env, credential: string | null): Promise<Principal> {
  if (!credential) throw new HttpError(401, "Authentication required");
  const principal = await principalByHash(env, await sha256Hex(credential));
  if (!principal) throw unauthorized();
  return principal;
}

/**
 * The principal of the key whose SHA-256 (hex) is `hash`, checked as `authenticate` checks a
 * presented key; null when it is unknown, disabled, or its owner is missing or disabled. Live
 * channels, which hold a key's hash rather than the key, ask it again before each push.
 */
export async function principalByHash(env: Env, hash: string): Promise<Principal | null> {
  const found = await keyByHash(env, hash);
  if (!found || !constantTimeEqual(found.key_hash, hash) || found.key.disabled) return null;
  const { key, owner } = found;
  if (key.owner_user_id && (!owner || owner.disabled)) return null;
  return { key, owner, admin: isAdminKey(key), restricted: owner !== null || key.owner_user_id !== null };
}

/** What a route demands of its caller. */
export interface Requirement {
  tag: string;
  action: Action;
  admin?: boolean;
}

/** The effective tag grant: own scopes and role, bounded by the owner's current scopes and role. */
export function principalGrantsTag(p: Principal, tag: string, action: Action): boolean {
  return keyAllowsTag(p.key, tag, action) && (!p.owner || keyAllowsTag(p.owner, tag, action));
}

/** The effective grant for a door at `path`: as principalGrantsTag, custom URL scopes included. */
export function principalGrantsRoute(p: Principal, tag: string, action: Action, path: string): boolean {
  return keyAllowsRoute(p.key, tag, action, path) && (!p.owner || keyAllowsRoute(p.owner, tag, action, path));
}

export function principalGrantsRun(p: Principal, kind: TargetKind, name: string): boolean {
  return keyRunRefusal(p.key, kind, name) === null && (!p.owner || keyRunRefusal(p.owner, kind, name) === null);
}

/**
 * Verdicts of conditions already evaluated during one answer (`me` authorizes every door). A
 * program that does not read `.request` gives the same verdict for every door, so it runs once.
 */
export type ConditionMemo = Map<string, boolean>;

/**
 * The conditions that bound the principal, each of which must output exactly `true`:
 * - the key's own and its role's, over the key's own input (`conditionInput(key, …)`);
 * - the owner's role's, over the key's own input as well (the owner's role governs its keys);
 * - the owner's own key condition, over the owner's input with this request and time: an owned
 *   key acts for its owner, so a request the owner's condition would refuse the owner (a time
 *   window that closed, a path outside the owner's) is refused to its keys too. It reads the
 *   owner's `.sub`, `.scopes` and `.policy`, so a condition written about the owner means the
 *   same when one of its keys is the caller.
 * Without `request` (a turn, the introspection of runnable targets) the inputs have none.
 */
export async function principalConditionsAllow(
  p: Principal,
  now: Date,
  request?: { method: string; path: string },
  memo?: ConditionMemo,
  thread?: ConditionThread,
): Promise<boolean> {
  const withThread = (input: ConditionInput): ConditionInput => (thread ? { ...input, thread } : input);
  const own = withThread(conditionInput(p.key, now, request));
  const checks: Array<{ holder: "key" | "owner"; program: string; input: ConditionInput }> = [
    ...keyConditions(p.key).map((program) => ({ holder: "key" as const, program, input: own })),
    ...(p.owner?.role_def?.condition ? [{ holder: "key" as const, program: p.owner.role_def.condition, input: own }] : []),
    ...(p.owner?.condition ? [{ holder: "owner" as const, program: p.owner.condition, input: withThread(conditionInput(p.owner, now, request)) }] : []),
  ];
  for (const { holder, program, input } of checks) {
    // One memo serves both inputs: the holder is part of the entry, so the owner's verdict is
    // never taken for the key's (the same program text can read `.sub` or `.scopes`).
    const memoKey = memo
      ? `${holder}\u0000${program}${conditionNeedsRequest(program) ? `\u0000${input.request?.method} ${input.request?.path}` : ""}${thread && conditionNeedsThread(program) ? `\u0000${JSON.stringify(thread)}` : ""}`
      : "";
    let ok = memo?.get(memoKey);
    if (ok === undefined) {
      ok = await conditionAllows(program, input);
      memo?.set(memoKey, ok);
    }
    if (!ok) return false;
  }
  return true;
}

/** Do any of the principal's conditions read `.thread` (so a door must check each thread it shows or acts on)? */
export function principalReadsThread(p: Principal): boolean {
  const programs = [...keyConditions(p.key), p.owner?.role_def?.condition, p.owner?.condition].filter((c): c is string => typeof c === "string");
  return programs.some(conditionNeedsThread);
}

/** Authorizes a request; any refusal is the generic 403. */
export async function authorize(p: Principal, need: Requirement, request: { method: string; path: string }, now: Date, memo?: ConditionMemo): Promise<void> {
  // The anonymous caller of a pinned door holds nothing: the pin itself is its authorization.
  if (p.anonymous) throw forbidden();
  if (need.admin && !p.admin) throw forbidden();
  if (!principalGrantsRoute(p, need.tag, need.action, request.path)) throw forbidden();
  if (!(await principalConditionsAllow(p, now, request, memo))) throw forbidden();
}

/**
 * The route pipeline's admission for a tagged door (src/platform/http/route.ts): authenticate, authorize,
 * and honour public pins. A request without a credential reads the pin only when the door may be
 * pinned at all, and enters as ANONYMOUS when pinned; otherwise 401. A request with a key is
 * authenticated as usual; when its grants refuse a pinned door, the pin lets it in (one extra
 * read, on refusals only) as ANONYMOUS, not as itself: the pin is what admits it, so it gets
 * exactly what no key gets. Entering as itself would hand an unowned key the unrestricted view of
 * a door its grants refuse (every trace, the shared feed), which is more than the pin offers anyone.
 */
export async function admit(
  env: Env,
  credential: string | null,
  door: DoorDeclaration,
  need: Requirement,
  request: { method: string; path: string },
  now: Date,
): Promise<Principal> {
  const pinnable = pinRefusal(door) === null;
  if (!credential) {
    if (!pinnable || !(await isPinned(env.DB, door.method, door.path))) throw new HttpError(401, "Authentication required");
    return ANONYMOUS;
  }
  const principal = await authenticate(env, credential);
  try {
    await authorize(principal, need, request, now);
  } catch (err) {
    if (pinnable && err instanceof HttpError && err.status === 403 && (await isPinned(env.DB, door.method, door.path))) return ANONYMOUS;
    throw err;
  }
  return principal;
}
