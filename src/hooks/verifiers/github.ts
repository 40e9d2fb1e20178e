/**
 * GitHub webhooks: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>`; the
 * delivery id is `X-GitHub-Delivery`. GitHub signs no timestamp, so replays are caught only by the
 * delivery id (docs/hooks.md "Replays").
 */
import { type VerifyInput, type VerifyResult, anyEqual, deliveryIdOf, hmacHex, refuse } from "./common";

export async function verifyGithub(input: VerifyInput): Promise<VerifyResult> {
  const given = input.headers.get("x-hub-signature-256");
  if (given === null || given.trim() === "") return refuse("missing");
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(given.trim());
  if (!m) return refuse("malformed");
  const expected = await hmacHex(input.secret, input.raw);
  if (!anyEqual(expected, [m[1].toLowerCase()])) return refuse("mismatch");
  return { ok: true, deliveryId: deliveryIdOf(input.headers, "x-github-delivery") };
}
