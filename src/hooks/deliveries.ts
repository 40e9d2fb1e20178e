/**
 * The public doors' work (docs/hooks.md "Firing"): a delivery on a topic, and a call of a
 * trigger link. Both read the raw body once (the route pipeline's 1 MiB cap) and never parse it
 * before it is authenticated: by the topic's verifier over those exact bytes, or by the link's
 * token (and an api key when the link asks for one).
 *
 * What an unauthenticated caller can learn is kept to what it could not avoid learning:
 * - a topic with a verifier answers one constant 401 to anything unverified, before its hooks are
 *   looked at, so whether it has hooks never shows;
 * - a topic with no verifier (open by design) fires for anyone, and one with no hooks answers
 *   202 with nothing fired, so open topics cannot be told from unknown ones;
 * - every trigger-link miss (malformed, unknown, expired or deleted token; a missing or invalid api
 *   key when the link requires one) is the same 404 `{"error":"not found"}`.
 */
import { authenticate, readCredential } from "../access-control/principal";
import { toHex } from "../access-control/crypto";
import type { Env } from "../platform/env";
import { type JsonObject, type JsonValue, checkJsonBounds } from "../platform/http/bounded-json";
import { MAX_BODY_BYTES } from "../platform/http/body";
import { HttpError, badRequest, notFound } from "../platform/http/errors";
import type { Settings } from "../platform/settings/settings";
import { type FireAnswer, fireHooks } from "./fire";
import { parseHookRow, topicHooksStatement } from "./hook-store";
import { linkByToken } from "./trigger-links";
import { VERIFIERS } from "./verifiers";
import { deliveryIdOf } from "./verifiers/common";
import { GENERIC_DELIVERY_HEADER } from "./verifiers/generic-hmac";
import { openVerifierSecret, parseVerifierRow, topicVerifierStatement } from "./verifier-store";

/** The one answer to a delivery that does not verify, whatever was wrong with it. */
export const VERIFICATION_FAILED = "signature verification failed";

/** The delivery's payload: its JSON (any JSON value), or null for an empty body; 400 otherwise (never echoing it). */
export function parsePayload(raw: Uint8Array): JsonValue {
  if (raw.byteLength === 0) return null;
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(raw));
  } catch {
    throw badRequest("the body must be JSON (or empty)");
  }
  const broken = checkJsonBounds(value, MAX_BODY_BYTES);
  if (broken) throw badRequest(`the body ${broken}`);
  return value as JsonValue;
}

/**
 * The replay key of a verified delivery: its delivery id when the signature covers it (Stripe's
 * event id, Standard Webhooks' webhook-id), else a digest of the signed body. An id the signature
 * does not cover could be changed or dropped on a captured delivery, which would then verify and
 * fire again; the body cannot change without breaking the signature. So a sender that means two
 * deliveries with the same body within the replay window must make the bodies differ.
 */
async function replayKey(idSigned: boolean, deliveryId: string | null, raw: Uint8Array): Promise<string> {
  if (idSigned && deliveryId !== null) return deliveryId;
  return `sha256:${toHex(await crypto.subtle.digest("SHA-256", raw))}`;
}

/** `POST /api/hooks/incoming/{topic}`: verify (when the topic has a verifier), then fire. */
export async function receiveDelivery(env: Env, settings: Settings, topic: string, raw: Uint8Array, headers: Headers, now: Date): Promise<FireAnswer> {
  const db = env.DB;
  // One round trip: the binding and the hooks. The hooks are used only once the delivery verified.
  const [bound, hooks] = await db.batch<Record<string, unknown>>([topicVerifierStatement(db, topic), topicHooksStatement(db, topic)]);
  const verifierRow = bound.results[0];
  let deliveryId: string | null;
  if (verifierRow) {
    const verifier = parseVerifierRow(verifierRow);
    const secret = await openVerifierSecret(verifier, env, settings);
    // Fail closed: a secret that cannot be had verifies nothing.
    if (secret === null) throw new HttpError(401, VERIFICATION_FAILED);
    const kind = VERIFIERS[verifier.kind];
    const verdict = await kind.verify({
      raw,
      headers,
      secret,
      nowMs: now.getTime(),
      toleranceSeconds: settings.hooks.verifierToleranceSeconds,
      signatureHeader: verifier.signature_header ?? undefined,
      deliveryHeader: verifier.delivery_header,
    });
    if (!verdict.ok) throw new HttpError(401, VERIFICATION_FAILED);
    deliveryId = await replayKey(kind.idSigned, verdict.deliveryId, raw);
  } else {
    deliveryId = deliveryIdOf(headers, GENERIC_DELIVERY_HEADER);
  }
  const payload = parsePayload(raw);
  return fireHooks(
    env,
    hooks.results.map(parseHookRow),
    payload,
    { namespace: `hook:${topic}`, deliveryId, link: null },
    settings.hooks.replayWindowSeconds,
    now,
  );
}

/** The query string as a payload object (a GET trigger carries no body); a repeated name keeps its last value. */
export function queryPayload(url: string): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of new URL(url).searchParams) out[k] = v;
  return out;
}

/** `GET|POST /api/hooks/trigger/{token}`: the link's topic's hooks, as the link's key, with its kwargs. */
export async function receiveLinkCall(env: Env, settings: Settings, token: string, request: Request, raw: Uint8Array | null, now: Date): Promise<FireAnswer> {
  const link = await linkByToken(env.DB, token, now.getTime());
  if (!link) throw notFound();
  if (link.require_api_key) {
    try {
      await authenticate(env, readCredential(request.headers));
    } catch (err) {
      if (err instanceof HttpError) throw notFound();
      throw err;
    }
  }
  const payload = raw === null ? queryPayload(request.url) : parsePayload(raw);
  const { results } = await topicHooksStatement(env.DB, link.topic).all<Record<string, unknown>>();
  return fireHooks(
    env,
    results.map(parseHookRow),
    payload,
    {
      // Per link, not per name: a link deleted and created again under its name starts afresh.
      namespace: `hook-link:${link.token_hash.slice(0, 32)}`,
      deliveryId: deliveryIdOf(request.headers, GENERIC_DELIVERY_HEADER),
      link: { tool_kwargs: link.tool_kwargs, execution_key: link.execution_key, execution_key_fingerprint: link.execution_key_fingerprint },
    },
    settings.hooks.replayWindowSeconds,
    now,
  );
}
