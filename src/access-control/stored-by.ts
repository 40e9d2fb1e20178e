/**
 * Stored references and the key that stored them (docs/security.md, "Confused deputy"). Whatever a
 * key stores that later runs under another identity or another key's grants (a preset's base tool
 * and state binding, a target config's, hook's or schedule's state binding, a sub-MCP app's tools, a
 * tool's extension combos) is bounded by the storing key's own grants: checked when it is stored
 * (`assertMayStore`, a 403 naming the field) and again when it runs (`storedByRefusal`, against
 * the storing key's live record and owner, read in the statement that already reads the stored
 * thing). A grant never buys another area's power.
 *
 * Grants here are the tag grammar and run grants with their role layer, for the key and its owner
 * (as a door checks them). A key's jq condition bounds the requests that key makes; the stored
 * thing runs in nobody's request, so conditions are not evaluated here.
 */
import { HttpError } from "../platform/http/errors";
import type { TargetKind } from "../shared/kinds";
import { keyAllowsTag, keyRunRefusal } from "./key-grants";
import { type KeyRecord, type KeyWithOwner, keyWithOwnerByUserId, parseKeyWithOwner } from "./key-store";
import type { Principal } from "./principal";
import { threadPrincipal } from "./identity";
import { isAdminKey } from "./scopes";

/**
 * The `stored_by` of a row written before stored references were recorded (migration 0023). No
 * key can have it (the user_id grammar has no parentheses). The run-time check lets it through as
 * it ran before the upgrade; re-saving the row records its writer (docs/security.md explains why).
 */
export const STORED_BEFORE_RECORDING = "(migrated)";

/**
 * The `stored_by` of a plugin's declaration (a marketplace install or update, admin-only doors):
 * the plugin, not a key, wrote it, and only an admin could install it; it runs as an admin's would.
 */
export const STORED_BY_PLUGIN = "(plugin)";

/** Writers that are no key: the run-time check has no key to re-read for them (see each constant). */
const NOT_A_KEY = new Set([STORED_BEFORE_RECORDING, STORED_BY_PLUGIN]);

/** What a stored reference needs of the key that stores it. */
export type StoredRef =
  | { kind: TargetKind; name: string }
  /** `read` to read a state's records (any named state), `write` to write them or attach templates to the state. */
  | { kind: "state"; state: string; action: "read" | "write" };

/** Why one key record (alone) does not hold `ref`, or null when it does. */
function keyRefusal(k: KeyRecord, ref: StoredRef): string | null {
  if (ref.kind !== "state") return keyRunRefusal(k, ref.kind, ref.name) === null ? null : `may not run the ${ref.kind} it references`;
  return keyAllowsTag(k, "states", ref.action) ? null : `has no states ${ref.action} grant`;
}

/** Does the key (bounded by its owner, as at a door) hold every one of `refs`? Null when it does, else why not. */
export function holderRefusal(holder: KeyWithOwner, refs: readonly StoredRef[]): string | null {
  for (const ref of refs) {
    const own = keyRefusal(holder.key, ref);
    if (own) return `the key ${own}`;
    if (holder.owner) {
      const owner = keyRefusal(holder.owner, ref);
      if (owner) return `the key's owner ${owner}`;
    }
  }
  return null;
}

/**
 * The store-time check: the caller must hold what each reference needs, else 403 naming `field`
 * (never the value). Admins pass, as at every door.
 */
export function assertMayStore(caller: Principal, field: string, refs: readonly StoredRef[]): void {
  if (caller.admin || refs.length === 0) return;
  if (caller.anonymous || holderRefusal({ key: caller.key, owner: caller.owner }, refs) !== null) {
    throw new HttpError(
      403,
      `${field}: the calling key lacks the grant this reference needs (a stored reference is bounded by the grants of the key that stores it)`,
    );
  }
}

/**
 * The run-time check: may what `storedBy` stored still run? `holder` is its live key and owner as
 * read with the stored row (null: no such key). Answers null when it may, else the reason (it
 * names no key, tool or state: a run's failure may reach the caller of a sub-MCP app). The
 * stored-by key must exist, be enabled, have a live enabled owner when owned, and still hold each
 * reference; an admin key holds everything.
 */
export function storedByRefusal(storedBy: string, holder: KeyWithOwner | null | undefined, refs: readonly StoredRef[]): string | null {
  if (NOT_A_KEY.has(storedBy) || refs.length === 0) return null;
  const who = "the key that stored it";
  // A user_id issued again after a revoke is another holder: it does not carry what the first stored.
  if (!holder || threadPrincipal(holder.key) !== storedBy) return `${who} no longer exists`;
  if (holder.key.disabled) return `${who} is disabled`;
  if (holder.key.owner_user_id && (!holder.owner || holder.owner.disabled)) return `${who} has a missing or disabled owner`;
  if (isAdminKey(holder.key)) return null;
  const why = holderRefusal(holder, refs);
  return why ? `${who}: ${why.replace(/^the key/, "it")}` : null;
}

/** Reads `storedBy`'s key and owner (one statement; for paths with no statement of their own to ride in). */
export async function readStoredBy(db: D1Database, storedBy: string): Promise<KeyWithOwner | null> {
  if (NOT_A_KEY.has(storedBy)) return null;
  return parseKeyWithOwner((await keyWithOwnerByUserId(db, storedByUserId(storedBy)).first()) as Record<string, unknown> | null);
}

/** The user_id part of a `stored_by` (`user_id`, or `user_id!generation` for a re-issued id). */
export function storedByUserId(storedBy: string): string {
  const bang = storedBy.indexOf("!");
  return bang < 0 ? storedBy : storedBy.slice(0, bang);
}

/** SQL for the user_id part of the `stored_by` column `column`, to join the writer's key row on. */
export function storedByUserIdSql(column: string): string {
  return `(CASE WHEN instr(${column}, '!') > 0 THEN substr(${column}, 1, instr(${column}, '!') - 1) ELSE ${column} END)`;
}

/**
 * What a row records as its writer: the caller's user_id, with its generation once the id was
 * issued again (src/access-control/identity.ts), so a later holder of the id is never taken for the writer.
 * The anonymous caller of a pinned door has a user_id no key can have.
 */
export function storedByOf(caller: Principal): string {
  return caller.anonymous ? caller.key.user_id : threadPrincipal(caller.key);
}
