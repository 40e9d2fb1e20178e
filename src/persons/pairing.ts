/**
 * Pairing policy (spec §2.3; decisions §12; for what the spec leaves open, the reference's facts):
 * what an inbound on a multichannel target asks for, how codes look and are minted and stored,
 * the redeem throttle, the merge survivor, and the fixed replies a participant sees. Pure functions
 * (the code's hash uses WebCrypto, hence async), unit-tested; the person store applies them.
 */
import { z } from "zod";

/** Codes are `LINK-` and 8 symbols of this alphabet. */
export const CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
export const CODE_LENGTH = 8;
export const CODE_PREFIX = "LINK-";
/** Seconds a minted code stays redeemable. */
export const CODE_TTL_SECONDS = 900;
/** Consecutive invalid redeems a party may make before each further one locks it out. */
export const REDEEM_BACKOFF_THRESHOLD = 5;
/** The longest lock, and how long the failure count is kept. */
export const REDEEM_BACKOFF_CAP_SECONDS = 900;

/** The replies a participant sees (fixed texts; the invalid one is uniform on purpose). */
export const PAIRING_REPLIES = {
  minted: (code: string, expiresAtIso: string) =>
    `Your pairing code is ${code}. Send it from your other conversation to link the two. It expires at ${expiresAtIso}.`,
  linked: "Done — this conversation is now linked to your other one.",
  unlinked: "Done — this conversation is no longer linked.",
  notLinked: "This conversation is not linked to anything, so there is nothing to unlink.",
  invalid: "That pairing code is not valid. It may have expired or already been used.",
} as const;

/** What an inbound on a multichannel target asks for. */
export type PairingIntent = { kind: "link" } | { kind: "unlink" } | { kind: "redeem"; code: string } | { kind: "text" };

const TOKEN = new RegExp(`(?<![A-Za-z0-9])${CODE_PREFIX}[A-Z0-9]{${CODE_LENGTH}}(?![A-Za-z0-9])`);

/** Classifies an inbound text: the whole trimmed text `/link` or `/unlink`, else the first code token anywhere, else plain text. */
export function classifyInbound(text: string | null): PairingIntent {
  if (text === null) return { kind: "text" };
  const whole = text.trim();
  if (whole === "/link") return { kind: "link" };
  if (whole === "/unlink") return { kind: "unlink" };
  const m = TOKEN.exec(text);
  return m ? { kind: "redeem", code: m[0] } : { kind: "text" };
}

/**
 * Mints a code from a CSPRNG. Rejection sampling keeps every symbol equally likely: bytes at or
 * above the largest multiple of the alphabet's size are drawn again.
 */
export function mintPairingCode(random: (bytes: Uint8Array) => Uint8Array = (b) => crypto.getRandomValues(b)): string {
  const n = CODE_ALPHABET.length;
  const limit = 256 - (256 % n);
  let out = "";
  while (out.length < CODE_LENGTH) {
    for (const byte of random(new Uint8Array(16))) {
      if (byte >= limit) continue;
      out += CODE_ALPHABET[byte % n];
      if (out.length === CODE_LENGTH) break;
    }
  }
  return CODE_PREFIX + out;
}

/** What a code is stored as: its SHA-256, hex. A stored hash cannot be redeemed. */
export async function hashPairingCode(code: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(code));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The lock after `failures` consecutive invalid redeems, in seconds: none up to the threshold,
 * then 1, 2, 4 … capped at REDEEM_BACKOFF_CAP_SECONDS.
 */
export function redeemLockSeconds(failures: number): number {
  if (failures <= REDEEM_BACKOFF_THRESHOLD) return 0;
  return Math.min(2 ** (failures - REDEEM_BACKOFF_THRESHOLD - 1), REDEEM_BACKOFF_CAP_SECONDS);
}

/**
 * The prefix of a redeem party that is a network, not one sender (a web visitor's, whose ids are
 * free to mint). Its count is not reset by a success: anyone on that network can mint a valid
 * code in one conversation and redeem it from another, so a reset would buy fresh guesses.
 */
export const NETWORK_PARTY_PREFIX = "net:";

/** Does a valid redeem clear `party`'s failure count? (Not a network's; see NETWORK_PARTY_PREFIX.) */
export function successClearsThrottle(party: string): boolean {
  return !party.startsWith(NETWORK_PARTY_PREFIX);
}

/** Of two persons merging, the one that survives: the earlier `created_at`, a tie to the smaller `person_id`. */
export function mergeSurvivor<P extends { person_id: string; created_at: string }>(a: P, b: P): { survivor: P; absorbed: P } {
  const ta = Date.parse(a.created_at);
  const tb = Date.parse(b.created_at);
  const aFirst = ta < tb || (ta === tb && a.person_id < b.person_id);
  return aFirst ? { survivor: a, absorbed: b } : { survivor: b, absorbed: a };
}

/** Where an address lives: a channel conversation, or an api caller's composed address. */
export const DoorAddress = z.discriminatedUnion("door", [
  z.object({ door: z.literal("channel"), channel: z.string(), our_identity: z.string(), address: z.string() }),
  z.object({ door: z.literal("api"), address: z.string() }),
]);
export type DoorAddress = z.infer<typeof DoorAddress>;

/** The key an address is found by, per target (door-qualified, so the same digits on two channels are two addresses). */
export function doorAddressKey(a: DoorAddress): string {
  return JSON.stringify(a.door === "channel" ? ["channel", a.channel, a.our_identity, a.address] : ["api", a.address]);
}

/** A BCP 47 tag, canonicalized; null when `tag` is not one. */
export function canonicalLocale(tag: string): string | null {
  if (tag.trim() !== tag || tag === "") return null;
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    return null;
  }
}
