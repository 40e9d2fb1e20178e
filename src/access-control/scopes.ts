/**
 * The scope grammar of decisions §2 (pure):
 *   `*`                       everything
 *   `<tag>:read`, `<tag>:write` (write implies read); bare `<tag>` means `<tag>:write`
 *   `tool:<name>`, `agent:<name>` may run that tool / agent (also granted by tools:write / agents:write)
 * extended (docs/access-control.md) by custom URL scope ids, which grant exactly their
 * URLs (src/access-control/custom-scopes.ts) and must exist when a key is given one.
 */
import type { TargetKind } from "../shared/kinds";

export const SCOPE_TAGS = [
  "conversations",
  "channels",
  "tools",
  "agents",
  "presets",
  "states",
  "notifications",
  "connectors",
  "marketplace",
  "checkpoints",
  "auth",
  "config",
  "system",
  "resources",
  "runs",
  "hooks",
  "schedules",
  "interactions",
  "observability",
  "plugins",
  "storage",
  "templates",
  "extensions",
  "backup",
  "sandbox",
  "login",
  "manifest",
] as const;
export type ScopeTag = (typeof SCOPE_TAGS)[number];
export type Action = "read" | "write";

const TAGS = new Set<string>(SCOPE_TAGS);
const RUN_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * A custom URL scope's id (docs/access-control.md): lower-case letters, digits and `_ . -`,
 * starting with a letter, so it can never be read as the tag grammar (no `:`, no `*`); a tag name
 * itself and the literal `urls` (a path segment of the scope doors) are reserved.
 */
export const CUSTOM_SCOPE_ID = /^[a-z][a-z0-9_.-]{0,63}$/;
const RESERVED_SCOPE_IDS = new Set(["urls"]);

export function isCustomScopeId(s: string): boolean {
  return CUSTOM_SCOPE_ID.test(s) && !TAGS.has(s) && !RESERVED_SCOPE_IDS.has(s);
}

/** A scope a key may list: the tag grammar or a custom scope id (whose existence is checked apart). */
export function isKeyScope(s: string): boolean {
  return isValidScope(s) || isCustomScopeId(s);
}

/** True when `scope` is a well-formed scope string. */
export function isValidScope(scope: string): boolean {
  if (scope === "*") return true;
  const [head, tail, ...rest] = scope.split(":");
  if (rest.length) return false;
  if (tail === undefined) return TAGS.has(head);
  if (head === "tool" || head === "agent") return RUN_NAME.test(tail);
  return TAGS.has(head) && (tail === "read" || tail === "write");
}

/** Does the scope list grant `action` on `tag`? */
export function grantsTag(scopes: readonly string[], tag: string, action: Action): boolean {
  for (const s of scopes) {
    if (s === "*" || s === tag || s === `${tag}:write`) return true;
    if (action === "read" && s === `${tag}:read`) return true;
  }
  return false;
}

/** Does the scope list let its holder run the named tool or agent? */
export function grantsRun(scopes: readonly string[], kind: TargetKind, name: string): boolean {
  const area = kind === "tool" ? "tools" : "agents";
  return scopes.some((s) => s === "*" || s === area || s === `${area}:write` || s === `${kind}:${name}`);
}

/** Is `requested` no broader than what `held` grants? Used when a non-admin mints or edits. */
export function scopeCovered(held: readonly string[], requested: string): boolean {
  if (held.includes("*")) return true;
  if (requested === "*") return false;
  // A custom scope is handed out only by a holder of that very scope (its URLs are not a tag).
  if (isCustomScopeId(requested)) return held.includes(requested);
  const [head, tail] = requested.split(":");
  if (head === "tool" || head === "agent") return grantsRun(held, head, tail);
  return grantsTag(held, head, tail === "read" ? "read" : "write");
}

/** An admin holds `*` with no condition, no owner and no role (a role only ever narrows). */
export function isAdminKey(k: { scopes: readonly string[]; condition: string | null; owner_user_id: string | null; role?: string | null }): boolean {
  return k.scopes.includes("*") && !k.condition && !k.owner_user_id && !k.role;
}
