/**
 * A visitor's profile (docs/channels.md, "Pre-chat form"): what a web visitor told the identity's
 * pre-chat form, and what the site's backend vouched for in a verified visitor's token (name and
 * email). One shape for the turn (`profile` in a tool's payload), the record (`inbound_profile`)
 * and the person (`profile`), so a target, an operator and the person read door see the same thing.
 *
 * A leaf like media.ts: zod only, so the channels, the persons and the conversations can all name it.
 */
import { z } from "zod";

/** The claims of a verified visitor's token the profile carries, marked as the site's. */
export const VOUCHED_KEYS = ["name", "email"] as const;
export type VouchedKey = (typeof VOUCHED_KEYS)[number];

/** One answer: text (a text, email or enum field), a number or a boolean. */
export const ProfileValue = z.union([z.string(), z.number(), z.boolean()]);
export type ProfileValue = z.infer<typeof ProfileValue>;

/**
 * The profile as targets, records and persons carry it: every field by name, the pre-chat answers
 * and the vouched claims together; `verified` lists the fields whose value the site vouched for.
 */
export const VisitorProfile = z
  .object({
    fields: z.record(z.string(), ProfileValue),
    verified: z.array(z.enum(VOUCHED_KEYS)),
  })
  .strict()
  .describe("VisitorProfile");
export type VisitorProfile = z.infer<typeof VisitorProfile>;

/** The claims a verified visitor's token carried. */
export type Vouched = Partial<Record<VouchedKey, string>>;

/**
 * The profile of a visitor who answered `answers` and whom the site vouched for with `vouched`
 * (null when there is neither). A vouched value stands over an answer of the same name.
 */
export function composeProfile(answers: Record<string, ProfileValue> | null, vouched: Vouched | null): VisitorProfile | null {
  const claims = Object.entries(vouched ?? {}).filter((e): e is [VouchedKey, string] => typeof e[1] === "string");
  if (!answers && !claims.length) return null;
  return {
    fields: { ...(answers ?? {}), ...Object.fromEntries(claims) },
    verified: claims.map(([k]) => k),
  };
}

/**
 * `next` over `prev`, as a person keeps profiles from several conversations: each field takes its
 * newest value, and a field is marked verified only when its newest value was vouched for.
 */
export function mergeProfiles(prev: VisitorProfile | null, next: VisitorProfile): VisitorProfile {
  if (!prev) return next;
  const kept = prev.verified.filter((k) => !Object.hasOwn(next.fields, k));
  return { fields: { ...prev.fields, ...next.fields }, verified: [...new Set([...kept, ...next.verified])] };
}
