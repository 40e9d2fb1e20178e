/**
 * Independent check of the callback signature of decisions §8, written against Node's crypto
 * rather than the service's code: `X-Service-Signature: sha256=<lowercase hex HMAC-SHA256(secret,
 * raw body bytes)>`.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export function expectedSignature(secret: string, rawBody: string): string {
  return `sha256=${createHmac("sha256", secret).update(Buffer.from(rawBody, "utf8")).digest("hex")}`;
}

/** True when `header` is exactly the lowercase-hex signature of `rawBody` under `secret`. */
export function signatureValid(secret: string, rawBody: string, header: string | string[] | undefined): boolean {
  if (typeof header !== "string" || !/^sha256=[0-9a-f]{64}$/.test(header)) return false;
  const want = Buffer.from(expectedSignature(secret, rawBody));
  const got = Buffer.from(header);
  return want.length === got.length && timingSafeEqual(want, got);
}
