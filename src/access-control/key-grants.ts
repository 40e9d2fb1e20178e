/**
 * What one key record grants (pure): the three layers of docs/access-control.md, "How a request
 * is authorized". A door's (tag, action) must pass the key's scopes (the tag grammar, or a custom
 * scope whose URLs match the request path) AND the key's role grants when it names a role; a run
 * grant (tool/agent) must pass `tool:<name>`-style scopes AND the role's grant on the area.
 * Conditions (jq) are evaluated by the callers (src/access-control/principal.ts, src/access-control/pass-role.ts).
 */
import { customScopesGrantPath } from "./custom-scopes";
import type { TargetKind } from "../shared/kinds";
import type { KeyRecord } from "./key-store";
import { roleAllows } from "./roles";
import { type Action, grantsRun, grantsTag } from "./scopes";

/** The role layer: no role passes; a role that no longer exists denies (fail closed). */
export function roleLayerAllows(k: KeyRecord, tag: string, action: Action): boolean {
  if (k.role === null) return true;
  if (k.role_def === null) return false;
  return roleAllows(k.role_def.grants, tag, action);
}

/** Does the key (alone) let its holder through a door tagged (tag, action) at `path`? */
export function keyAllowsRoute(k: KeyRecord, tag: string, action: Action, path: string): boolean {
  const scoped = grantsTag(k.scopes, tag, action) || customScopesGrantPath(k.scopes, k.scope_urls, path);
  return scoped && roleLayerAllows(k, tag, action);
}

/** Does the key's tag grammar (not its custom URLs) and role grant (tag, action)? */
export function keyAllowsTag(k: KeyRecord, tag: string, action: Action): boolean {
  return grantsTag(k.scopes, tag, action) && roleLayerAllows(k, tag, action);
}

/**
 * The area tag a run grant is bounded by in a role, and the level it needs: read, the level the
 * agent run door itself asks of its caller (`agents:read` plus the run grant).
 */
export function runArea(kind: TargetKind): { tag: string; action: Action } {
  return { tag: kind === "tool" ? "tools" : "agents", action: "read" };
}

/** Why the key (alone) may not run the tool or agent, or null when it may. */
export function keyRunRefusal(k: KeyRecord, kind: TargetKind, name: string): "grant" | "role" | "role-missing" | null {
  if (!grantsRun(k.scopes, kind, name)) return "grant";
  if (k.role !== null && k.role_def === null) return "role-missing";
  const area = runArea(kind);
  return roleLayerAllows(k, area.tag, area.action) ? null : "role";
}

/** The jq programs that must each output exactly `true` for the key: its own, then its role's. */
export function keyConditions(k: KeyRecord): string[] {
  const out: string[] = [];
  if (k.condition) out.push(k.condition);
  if (k.role_def?.condition) out.push(k.role_def.condition);
  return out;
}
