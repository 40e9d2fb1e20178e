/**
 * A generic HMAC-SHA256 signature for senders that follow no named scheme: the hex HMAC-SHA256 of
 * the raw body under the secret, optionally prefixed `sha256=`, in a header of the binding's
 * choosing (default `X-Signature-256`). The delivery id is read from another header of its
 * choosing (default `X-Delivery-Id`; none configured, or absent on a delivery: no replay check).
 * Nothing is timestamped, so the delivery id is the only replay defence.
 */
import { type VerifyInput, type VerifyResult, anyEqual, deliveryIdOf, hmacHex, refuse } from "./common";

export const GENERIC_SIGNATURE_HEADER = "X-Signature-256";
export const GENERIC_DELIVERY_HEADER = "X-Delivery-Id";

export async function verifyGenericHmac(input: VerifyInput): Promise<VerifyResult> {
  const given = input.headers.get(input.signatureHeader ?? GENERIC_SIGNATURE_HEADER);
  if (given === null || given.trim() === "") return refuse("missing");
  const m = /^(?:sha256=)?([0-9a-fA-F]{64})$/.exec(given.trim());
  if (!m) return refuse("malformed");
  const expected = await hmacHex(input.secret, input.raw);
  if (!anyEqual(expected, [m[1].toLowerCase()])) return refuse("mismatch");
  return { ok: true, deliveryId: deliveryIdOf(input.headers, input.deliveryHeader === undefined ? GENERIC_DELIVERY_HEADER : input.deliveryHeader) };
}
