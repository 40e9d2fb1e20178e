/**
 * Standard Webhooks (standardwebhooks.com): headers `webhook-id`, `webhook-timestamp` (unix
 * seconds) and `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256(key,
 * "<id>.<timestamp>.<raw body>")>` (several while a secret rolls; other versions are ignored). The
 * key is the secret's base64 after an optional `whsec_` prefix. The timestamp must be within the
 * tolerance either way; the delivery id is `webhook-id`.
 */
import { hmacSha256 } from "../../access-control/crypto";
import {
  MAX_DELIVERY_ID_CHARS,
  MAX_SIGNATURES,
  type VerifyInput,
  type VerifyResult,
  anyEqual,
  epochSeconds,
  prefixed,
  refuse,
  withinTolerance,
} from "./common";

/** The signing key of a Standard Webhooks secret (`whsec_` + base64), or null when it is not one. */
export function standardWebhooksKey(secret: string): Uint8Array | null {
  const b64 = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  if (b64.length === 0 || b64.length > 1024 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return null;
  try {
    const bin = atob(b64);
    if (bin.length === 0) return null;
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

export async function verifyStandardWebhooks(input: VerifyInput): Promise<VerifyResult> {
  const id = input.headers.get("webhook-id")?.trim();
  const ts = input.headers.get("webhook-timestamp")?.trim();
  const sig = input.headers.get("webhook-signature")?.trim();
  if (!id || !ts || !sig) return refuse("missing");
  const seconds = epochSeconds(ts);
  if (seconds === null || id.length > MAX_DELIVERY_ID_CHARS || /[\s.]/.test(id)) return refuse("malformed");
  const candidates: string[] = [];
  for (const entry of sig.split(" ").filter(Boolean)) {
    const comma = entry.indexOf(",");
    if (comma <= 0) return refuse("malformed");
    if (entry.slice(0, comma) === "v1") candidates.push(entry.slice(comma + 1));
  }
  if (candidates.length === 0 || candidates.length > MAX_SIGNATURES) return refuse("malformed");
  const key = standardWebhooksKey(input.secret);
  // A secret that is not one fails closed (the binding door refuses such secrets; a tampered store would not).
  if (!key) return refuse("mismatch");
  const expected = toBase64(await hmacSha256(key, prefixed(`${id}.${ts}.`, input.raw)));
  if (!anyEqual(expected, candidates)) return refuse("mismatch");
  if (!withinTolerance(seconds, input.nowMs, input.toleranceSeconds)) return refuse("stale");
  return { ok: true, deliveryId: id };
}
