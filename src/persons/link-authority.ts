/**
 * Who may link two conversations (docs/persons.md "Who may mint a code"; docs/security.md "Link
 * authority"). A pairing code is the authority to join another conversation's person, so minting
 * one for a conversation is as strong as writing that target's routes: outside the conversation's
 * own turn, the key that mints must hold what `POST /api/conversations/{route_name}` asks of a
 * writer of a route to the target, namely `conversations` write and the grant to run the target
 * (`tool:<name>` / `agent:<name>`, `tools`/`agents` write, or `*`), for itself and its owner. Turning
 * `multichannel` on (which turns pairing on) asks the same run grant beside the config door's
 * own `conversations` write.
 */
import { keyAllowsTag, keyRunRefusal } from "../access-control/key-grants";
import { type KeyRecord, type KeyWithOwner, keyWithOwnerByUserId, parseKeyWithOwner } from "../access-control/key-store";
import { isAdminKey } from "../access-control/scopes";
import type { TargetKind } from "../shared/kinds";

/** The target a code would link into. */
export type LinkTarget = { kind: TargetKind; name: string };

/** Why one key record (alone) may not run `target`, or null when it may. */
function runRefusal(k: KeyRecord, target: LinkTarget): string | null {
  return keyRunRefusal(k, target.kind, target.name) === null ? null : `may not run the ${target.kind} the route targets`;
}

/** Why one key record (alone) may not mint for `target`, or null when it may. */
function mintRefusalOf(k: KeyRecord, target: LinkTarget): string | null {
  if (!keyAllowsTag(k, "conversations", "write")) return "has no conversations write grant";
  return runRefusal(k, target);
}

/**
 * Why `holder` (a key and its owner, as read live) may not mint a code for a conversation of
 * `target` outside that conversation's turn; null when it may. Admins may.
 */
export function mintRefusal(holder: KeyWithOwner, target: LinkTarget): string | null {
  if (holder.key.disabled) return "the key is disabled";
  if (holder.key.owner_user_id && (!holder.owner || holder.owner.disabled)) return "the key's owner is missing or disabled";
  if (isAdminKey(holder.key)) return null;
  const own = mintRefusalOf(holder.key, target);
  if (own) return `the key ${own}`;
  const owner = holder.owner ? mintRefusalOf(holder.owner, target) : null;
  return owner ? `the key's owner ${owner}` : null;
}

/**
 * The store-time rule of `multichannel: true`: the writer (already past the config door's
 * `conversations` write) must be allowed to run the target. Null when it is, else why not.
 */
export function multichannelRefusal(holder: KeyWithOwner, target: LinkTarget): string | null {
  if (isAdminKey(holder.key)) return null;
  const own = runRefusal(holder.key, target);
  if (own) return `the key ${own}`;
  const owner = holder.owner ? runRefusal(holder.owner, target) : null;
  return owner ? `the key's owner ${owner}` : null;
}

/**
 * Reads the running key live (one statement) and answers why it may not mint for `target`, or
 * null. A key that is gone or was re-minted since the run started (another fingerprint) may not.
 */
export async function liveMintRefusal(db: D1Database, runAs: { user_id: string; fingerprint: string }, target: LinkTarget): Promise<string | null> {
  const holder = parseKeyWithOwner((await keyWithOwnerByUserId(db, runAs.user_id).first()) as Record<string, unknown> | null);
  if (!holder || holder.key.key_fingerprint !== runAs.fingerprint) return "the running key no longer exists";
  return mintRefusal(holder, target);
}
