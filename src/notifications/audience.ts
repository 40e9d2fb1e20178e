/**
 * The audience clamp (platform-facts A1 step 4; decisions §2): a restricted caller (an owned key)
 * may address only itself. Its omitted audience becomes its own user id, so its every
 * notification (a channel send too) lands in its own feed; naming another identity is a 403, not
 * a 400, because the input is well-formed and the caller is simply not allowed to do it.
 * Unrestricted callers (admin, ownerless keys) pass unchanged and may broadcast (no audience).
 */

export interface AudienceCaller {
  restricted: boolean;
  /** The caller's own user id (`principal.key.user_id`). */
  user_id: string;
}

export type AudienceVerdict = { ok: true; audience: string | undefined } | { ok: false };

/** The audience a send by `caller` records to, or a refusal (pure). */
export function clampAudience(caller: AudienceCaller, audience: string | undefined): AudienceVerdict {
  if (!caller.restricted) return { ok: true, audience };
  if (audience === undefined || audience === caller.user_id) return { ok: true, audience: caller.user_id };
  return { ok: false };
}

/** The feed a caller reads: a restricted caller its own identity's, anyone else the shared feed. */
export function feedOfReader(caller: AudienceCaller): { kind: "identity"; user_id: string } | { kind: "shared" } {
  return caller.restricted ? { kind: "identity", user_id: caller.user_id } : { kind: "shared" };
}
