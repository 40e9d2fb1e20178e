/**
 * The `Idempotency-Key` request header (IETF httpapi draft "The Idempotency-Key HTTP Header
 * Field"; docs/api-notes.md, "Retrying a request"): on a door declared `idempotent` (RouteSpec),
 * a caller names its request with a key so that a retry of it answers what the first one answered
 * instead of doing the work again.
 *
 * Grammar: 1 to 255 characters of letters, digits and `-_.~:+/=` (a UUID, a ULID, base64 of
 * random bytes), sent bare or as a structured-field string in double quotes (the draft's form; the
 * quotes are not part of the key). Anything else, and a header sent twice, is 400 naming the header.
 *
 * A request is identified by its fingerprint: SHA-256 over the method, the path and the body's
 * bytes exactly as sent. The same key with another fingerprint is 422; the same key while the first
 * request is still being answered is 409. Where the keys are kept, and for how long, is each door's
 * area's business; the scope is always the calling key's lineage and the door.
 */
import { HttpError, badRequest } from "./errors";

/** The header's name, as documents and error messages spell it. */
export const IDEMPOTENCY_HEADER = "Idempotency-Key";

/** Longest key accepted (Stripe's bound; the draft sets none). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

const KEY = /^[A-Za-z0-9._~:+/=-]{1,255}$/;

/** A request's idempotency key and the fingerprint of the request it names. */
export interface IdempotencyKey {
  key: string;
  /** Lower-case hex SHA-256 of `METHOD path\n` followed by the body's bytes. */
  fingerprint: string;
}

/** The header's grammar, for error messages and the OpenAPI document. */
export const IDEMPOTENCY_GRAMMAR = `1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters of letters, digits and -_.~:+/=, bare or in double quotes`;

/** The key `headers` carry (null: none); a malformed one is 400 naming the header, never echoing it. */
export function readIdempotencyKey(headers: Headers): string | null {
  const value = headers.get(IDEMPOTENCY_HEADER);
  if (value === null) return null;
  const quoted = value.length >= 2 && value.startsWith('"') && value.endsWith('"');
  const key = quoted ? value.slice(1, -1) : value;
  // A header sent twice arrives joined by ", ", which the grammar refuses.
  if (!KEY.test(key)) throw badRequest(`invalid header: ${IDEMPOTENCY_HEADER}: must be ${IDEMPOTENCY_GRAMMAR}`);
  return key;
}

/** The fingerprint of a request: its method, path and body bytes. */
export async function requestFingerprint(method: string, path: string, body: Uint8Array | null): Promise<string> {
  const head = new TextEncoder().encode(`${method.toUpperCase()} ${path}\n`);
  const bytes = new Uint8Array(head.byteLength + (body?.byteLength ?? 0));
  bytes.set(head, 0);
  if (body) bytes.set(body, head.byteLength);
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The same key was used for another request (the draft's 422). */
export const keyReused = () => new HttpError(422, `${IDEMPOTENCY_HEADER} was already used for a different request`, "idempotency-key-reused");

/** The first request with this key is still being answered (the draft's 409). */
export const keyInFlight = () =>
  new HttpError(409, `a request with this ${IDEMPOTENCY_HEADER} is still being processed; retry later`, "idempotency-key-in-flight");

/** The response header that marks an answer replayed from an earlier request with the same key. */
export const REPLAYED_HEADER = "Idempotent-Replayed";

/** How a key matched what the store holds: answer the first request's answer, or refuse. */
export type KeyVerdict<T> = { kind: "new" } | { kind: "replay"; answer: T } | { kind: "reused" } | { kind: "in_flight" };

/** Throws the refusal of a `reused` or `in_flight` verdict; answers the others. */
export function unlessRefused<T>(v: KeyVerdict<T>): { kind: "new" } | { kind: "replay"; answer: T } {
  if (v.kind === "reused") throw keyReused();
  if (v.kind === "in_flight") throw keyInFlight();
  return v;
}

/**
 * A UUID-shaped id (version 8, RFC 9562 custom) derived from `parts`: a door whose work is stored
 * under an id of its own choosing (a tool run) names the work after the key, so a retry reaches the
 * same object.
 */
export async function derivedUuid(...parts: string[]): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\n"))));
  const b = digest.slice(0, 16);
  b[6] = (b[6] & 0x0f) | 0x80;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
