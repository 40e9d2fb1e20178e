/**
 * Stripe webhooks: `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw
 * body>")>[,v1=…][,v0=…]`. Any `v1` may match (Stripe sends several while a secret rolls); `v0`
 * and unknown schemes are ignored. The timestamp must be within the tolerance of the server's
 * clock, either way (Stripe's libraries refuse only old ones; a delivery from the future is as
 * suspect). The delivery id is the event's `id`, read from the body only after it verified.
 */
import {
  MAX_DELIVERY_ID_CHARS,
  MAX_SIGNATURES,
  type VerifyInput,
  type VerifyResult,
  anyEqual,
  epochSeconds,
  hmacHex,
  prefixed,
  refuse,
  withinTolerance,
} from "./common";

export async function verifyStripe(input: VerifyInput): Promise<VerifyResult> {
  const header = input.headers.get("stripe-signature");
  if (header === null || header.trim() === "") return refuse("missing");
  let t: string | null = null;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) return refuse("malformed");
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") {
      if (t !== null) return refuse("malformed");
      t = value;
    } else if (key === "v1") {
      if (!/^[0-9a-fA-F]{64}$/.test(value)) return refuse("malformed");
      v1.push(value.toLowerCase());
    }
  }
  const seconds = epochSeconds(t);
  if (seconds === null || v1.length === 0 || v1.length > MAX_SIGNATURES) return refuse("malformed");
  const expected = await hmacHex(input.secret, prefixed(`${t}.`, input.raw));
  if (!anyEqual(expected, v1)) return refuse("mismatch");
  // Checked after the signature, so a forged header learns nothing about the clock.
  if (!withinTolerance(seconds, input.nowMs, input.toleranceSeconds)) return refuse("stale");
  return { ok: true, deliveryId: eventId(input.raw) };
}

/** The verified event's `id` (a string), or null when the body is not a JSON object carrying one. */
function eventId(raw: Uint8Array): string | null {
  try {
    const v: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(raw));
    const id = v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>).id : undefined;
    return typeof id === "string" && id.trim() !== "" && id.length <= MAX_DELIVERY_ID_CHARS ? id.trim() : null;
  } catch {
    return null;
  }
}
