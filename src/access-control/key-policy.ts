/**
 * The rules a key's policy must satisfy when someone writes it (mint, edit, scopes change,
 * rollback), shared by the key doors and the history doors (docs/access-control.md).
 */
import { z } from "zod";
import { HttpError, badRequest, forbidden } from "../platform/http/errors";
import { existingScopeIds } from "./custom-scopes";
import { type KeyRecord, findByUserId } from "./key-store";
import type { Principal } from "./principal";
import { getRole } from "./roles";
import { isCustomScopeId, isKeyScope, scopeCovered } from "./scopes";

/** A key's scope list as a caller sends it: the tag grammar or custom scope ids. */
export const KeyScopes = z
  .array(z.string())
  .max(64)
  .superRefine((scopes, ctx) => {
    scopes.forEach((s, i) => {
      if (!isKeyScope(s)) ctx.addIssue({ code: "custom", path: [i], message: "not a valid scope (see the scope grammar) nor a custom scope id" });
    });
  });
export type KeyScopes = z.infer<typeof KeyScopes>;

/** A key as the doors show it (never the raw key, never its hash). */
export const KeyView = z.object({
  user_id: z.string(),
  description: z.string(),
  scopes: z.array(z.string()),
  condition: z.string().nullable(),
  owner_user_id: z.string().nullable(),
  role: z.string().nullable(),
  disabled: z.boolean(),
  key_fingerprint: z.string(),
  created_at: z.string(),
});
export type KeyView = z.infer<typeof KeyView>;

export function keyView(k: KeyRecord): KeyView {
  return {
    user_id: k.user_id,
    description: k.description,
    scopes: k.scopes,
    condition: k.condition,
    owner_user_id: k.owner_user_id,
    role: k.role,
    disabled: k.disabled,
    key_fingerprint: k.key_fingerprint,
    created_at: k.created_at,
  };
}

/** Requested scopes must each be covered by the caller's effective scopes (own ∩ owner's). */
export function assertWithinCaller(p: Principal, scopes: readonly string[]): void {
  if (p.admin) return;
  for (const s of scopes) {
    if (!scopeCovered(p.key.scopes, s) || (p.owner && !scopeCovered(p.owner.scopes, s))) throw forbidden();
  }
}

/** Every custom scope id in `scopes` must exist (have a URL) when it is given to a key. */
export async function assertScopesExist(db: D1Database, scopes: readonly string[], field = "scopes"): Promise<void> {
  const custom = scopes.filter(isCustomScopeId);
  if (custom.length === 0) return;
  const found = await existingScopeIds(db, custom);
  const missing = scopes.findIndex((s) => isCustomScopeId(s) && !found.has(s));
  if (missing >= 0) throw badRequest(`invalid body: ${field}.${missing}: no such custom scope`);
}

/**
 * A role given to a key must exist. Any caller allowed to write the key may give it any role: a
 * role only ever narrows a key (its grants are ANDed with the key's scopes), so it cannot be used
 * to widen one.
 */
export async function assertRoleExists(db: D1Database, role: string | null | undefined, field = "role"): Promise<void> {
  if (role === null || role === undefined) return;
  if (!(await getRole(db, role))) throw badRequest(`invalid body: ${field}: no such role`);
}

/**
 * Loads a key the caller may manage: admin any (404 when absent), others only keys they own
 * (uniform 403 whether absent or foreign). Owned keys manage nothing.
 */
export async function manageable(db: D1Database, p: Principal, userId: string): Promise<KeyRecord> {
  if (p.restricted) throw forbidden();
  const k = await findByUserId(db, userId);
  if (p.admin) {
    if (!k) throw new HttpError(404, "api key not found");
    return k;
  }
  if (!k || k.owner_user_id !== p.key.user_id) throw forbidden();
  return k;
}
