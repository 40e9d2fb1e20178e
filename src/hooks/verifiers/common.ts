/**
 * What every hook verifier shares (docs/hooks.md "Verifiers"). A verifier is a pure
 * function of the raw body, the request headers, the topic's secret and the clock: it runs on the
 * exact bytes the provider signed, before anything parses them, and answers only whether the
 * delivery is genuine and, when it is, the delivery's id (the replay key). The reason of a refusal
 * is for tests and logs: the door answers one constant 401 whatever it is.
 */
import { constantTimeEqual, hmacSha256, toHex } from "../../access-control/crypto";

export interface VerifyInput {
  /** The raw body, exactly as received. */
  raw: Uint8Array;
  headers: Headers;
  /** The topic's secret, as the operator gave it. */
  secret: string;
  nowMs: number;
  /** Timestamped schemes: the largest distance, either way, between the signed time and now. */
  toleranceSeconds: number;
  /** The generic scheme's header names (others ignore them). */
  signatureHeader?: string;
  deliveryHeader?: string | null;
}

export type Refusal = "missing" | "malformed" | "mismatch" | "stale";

export type VerifyResult = { ok: true; deliveryId: string | null } | { ok: false; reason: Refusal };

export type Verifier = (input: VerifyInput) => Promise<VerifyResult>;

/** Most signatures one header may offer (rotations); more is refused as malformed, bounding the work. */
export const MAX_SIGNATURES = 16;

/** A delivery id longer than this is not used as a replay key (ids of real providers are far shorter). */
export const MAX_DELIVERY_ID_CHARS = 256;

export const refuse = (reason: Refusal): VerifyResult => ({ ok: false, reason });

const enc = new TextEncoder();

/** `prefix` then the raw bytes: the signed content of the timestamped schemes, without decoding the body. */
export function prefixed(prefix: string, raw: Uint8Array): Uint8Array {
  const head = enc.encode(prefix);
  const out = new Uint8Array(head.byteLength + raw.byteLength);
  out.set(head, 0);
  out.set(raw, head.byteLength);
  return out;
}

/** Lower-case hex HMAC-SHA256 of `data` under the UTF-8 bytes of `secret`. */
export async function hmacHex(secret: string | Uint8Array, data: Uint8Array): Promise<string> {
  return toHex(await hmacSha256(secret, data));
}

/** True when any candidate equals `expected`, each compared in constant time (no early exit across candidates). */
export function anyEqual(expected: string, candidates: readonly string[]): boolean {
  let found = false;
  for (const c of candidates) if (constantTimeEqual(expected, c)) found = true;
  return found;
}

/** A header's delivery id, trimmed; null when absent, blank or unreasonably long. */
export function deliveryIdOf(headers: Headers, name: string | null | undefined): string | null {
  if (!name) return null;
  const v = headers.get(name)?.trim();
  return v && v.length <= MAX_DELIVERY_ID_CHARS ? v : null;
}

/** A whole number of seconds since the epoch, as text; null when it is not one. */
export function epochSeconds(text: string | undefined | null): number | null {
  if (!text || !/^\d{1,12}$/.test(text.trim())) return null;
  return Number(text.trim());
}

/** Is `seconds` within `toleranceSeconds` of `nowMs`, either way? */
export function withinTolerance(seconds: number, nowMs: number, toleranceSeconds: number): boolean {
  return Math.abs(nowMs / 1000 - seconds) <= toleranceSeconds;
}
