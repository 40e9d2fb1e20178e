import { HttpError, badRequest, forbidden } from "../platform/http/errors";
import type { TargetKind } from "../shared/kinds";
import { conditionAllows, conditionInput, conditionNeedsRequest } from "./condition";
import { keyRunRefusal } from "./key-grants";
import { type KeyRecord, type KeyWithOwner, findByUserId } from "./key-store";
import type { Principal } from "./principal";

/**
 * Pass-role bind (spec §5.4, decisions §2): the caller may bind its own user_id or a key it
 * owns; an admin may bind any existing key (absent → 404). A non-admin gets one uniform 403
 * whether the key is absent or foreign. A condition that needs a request (the key's, a role's, or
 * an owned key's owner's) is refused (400).
 * Returns the key's current fingerprint, which the binding stores.
 */
export async function bindExecutionKey(db: D1Database, caller: Principal, executionKey: string): Promise<string> {
  const key = await findByUserId(db, executionKey);
  if (!key) {
    // Only an admin learns that the key does not exist.
    if (!caller.admin) throw forbidden();
    throw new HttpError(404, "execution key not found");
  }
  if (!caller.admin && key.user_id !== caller.key.user_id && key.owner_user_id !== caller.key.user_id) throw forbidden();
  if (key.condition && conditionNeedsRequest(key.condition)) {
    throw badRequest("execution_key: its condition reads .request, which a turn does not have");
  }
  // A role's condition bounds the turn as well (docs/access-control.md), and so does the owner's role's.
  const owner = key.owner_user_id ? await findByUserId(db, key.owner_user_id) : null;
  for (const holder of [key, owner]) {
    const roleCondition = holder?.role_def?.condition;
    if (roleCondition && conditionNeedsRequest(roleCondition)) {
      throw badRequest("execution_key: a role's condition reads .request, which a turn does not have");
    }
  }
  // So does the owner's own condition: an owned key is bounded by it at every turn.
  if (owner?.condition && conditionNeedsRequest(owner.condition)) {
    throw badRequest("execution_key: its owner's condition reads .request, which a turn does not have");
  }
  return key.key_fingerprint;
}

export type TurnGrant = { kind: TargetKind; name: string };
export type TurnAuthority = { ok: true; key: KeyRecord } | { ok: false; reason: string };

/**
 * The live turn authorizer: re-reads the bound key at fire time. Missing, disabled, re-minted
 * (fingerprint changed), owner gone or disabled, grant missing (own or owner's), a role (own or
 * owner's) that is gone or lacks the run's area, or a condition (the key's, its role's, the
 * owner's role's, the owner's own) not `true` each deny. The roles come with the key in the same read
 * (src/access-control/key-store.ts). The reason is for the admin-only `error` field, never for callers.
 */
export async function authorizeTurn(
  db: D1Database,
  userId: string,
  fingerprint: string,
  grant: TurnGrant,
  now: Date = new Date(),
  /** The key and owner as read moments ago in the turn's own batched read (still a fire-time read). */
  prefetched?: KeyWithOwner | null,
): Promise<TurnAuthority> {
  const key = prefetched !== undefined ? (prefetched?.key ?? null) : await findByUserId(db, userId);
  if (!key) return { ok: false, reason: "execution key no longer exists" };
  if (key.disabled) return { ok: false, reason: "execution key is disabled" };
  if (key.key_fingerprint !== fingerprint) return { ok: false, reason: "execution key was re-minted; re-bind the route" };
  let owner: KeyRecord | null = null;
  if (key.owner_user_id) {
    owner = prefetched !== undefined ? (prefetched?.owner ?? null) : await findByUserId(db, key.owner_user_id);
    if (!owner || owner.disabled) return { ok: false, reason: "execution key's owner is missing or disabled" };
    const refusal = runRefusalReason(keyRunRefusal(owner, grant.kind, grant.name), "execution key's owner", grant);
    if (refusal) return { ok: false, reason: refusal };
  }
  const refusal = runRefusalReason(keyRunRefusal(key, grant.kind, grant.name), "execution key", grant);
  if (refusal) return { ok: false, reason: refusal };
  const input = conditionInput(key, now);
  if (key.condition && !(await conditionAllows(key.condition, input))) {
    return { ok: false, reason: "execution key's condition denied the turn" };
  }
  // Role conditions see the key's own input, as at a door (docs/access-control.md).
  if (key.role_def?.condition && !(await conditionAllows(key.role_def.condition, input))) {
    return { ok: false, reason: "execution key's role condition denied the turn" };
  }
  if (owner?.role_def?.condition && !(await conditionAllows(owner.role_def.condition, input))) {
    return { ok: false, reason: "execution key's owner's role condition denied the turn" };
  }
  // The owner's own condition, over the owner's input (as at a door: src/access-control/principal.ts), so
  // an owned key never outlives its owner's time window.
  if (owner?.condition && !(await conditionAllows(owner.condition, conditionInput(owner, now)))) {
    return { ok: false, reason: "execution key's owner's condition denied the turn" };
  }
  return { ok: true, key };
}

function runRefusalReason(r: ReturnType<typeof keyRunRefusal>, who: string, grant: TurnGrant): string | null {
  switch (r) {
    case null:
      return null;
    case "grant":
      return `${who} may not run ${grant.kind} ${grant.name}`;
    case "role-missing":
      return `${who}'s role no longer exists`;
    case "role":
      return `${who}'s role does not grant ${grant.kind === "tool" ? "tools" : "agents"}`;
  }
}
