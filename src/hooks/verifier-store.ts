/**
 * Topic verifier bindings (docs/hooks.md "Verifiers"): at most one per topic, in D1
 * (`hook_verifiers`, migration 0017). The secret must be recoverable (an HMAC is computed with it
 * at every delivery), so it is either sealed at rest with AES-256-GCM under
 * `SETTINGS_ENCRYPTION_KEY` (src/config/secrets.ts; the AAD names the topic, so a sealed secret
 * copied to another topic does not open) or an `{"env": "SECRET_…"}` reference resolved at
 * delivery time. No door ever shows it back.
 */
import { z } from "zod";
import { openText, sealText, sealingRing, settingsKeyRing } from "../config/secrets";
import type { EnvVars } from "../platform/env";
import { badRequest } from "../platform/http/errors";
import { intactIdentifier } from "../platform/http/identifiers";
import type { Settings } from "../platform/settings/settings";
import { all, d1, first, list, run, sql, trusted } from "../platform/persistence/d1";
import { validStored } from "../platform/persistence/stored-json";
import { EnvRefError, REDACTED, envRefSchema, refusedReferences, refusedReferencesMessage, resolveEnvRef } from "../outbound/env-refs";
import { VERIFIER_KINDS, type VerifierKind } from "./verifiers";
import { GENERIC_DELIVERY_HEADER, GENERIC_SIGNATURE_HEADER } from "./verifiers/generic-hmac";
import { standardWebhooksKey } from "./verifiers/standard-webhooks";
import { must } from "../platform/must";

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
const headerName = z.string().regex(HEADER_NAME, { message: "must be a header name (1-128 token characters)" });

/** A literal secret as given (sealed at rest); also the `hook-secrets` backup row's value. */
export const VerifierSecretLiteral = intactIdentifier(z.string().min(8, { message: "must be at least 8 characters" }).max(4096));

/** A secret as given: the value itself (sealed at rest) or an env reference. */
const SecretInput = z.union([VerifierSecretLiteral, envRefSchema]);

const secretField = { secret: SecretInput };

/** `PUT /api/hooks/topics/{topic}/verifier`. */
export const VerifierBody = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("github"), ...secretField }).strict(),
  z.object({ kind: z.literal("stripe"), ...secretField }).strict(),
  z.object({ kind: z.literal("standard_webhooks"), ...secretField }).strict(),
  z
    .object({
      kind: z.literal("hmac_sha256"),
      ...secretField,
      /** Where the signature is (default X-Signature-256). */
      signature_header: headerName.optional(),
      /** Where the delivery id is (default X-Delivery-Id); null: no replay check. */
      delivery_header: headerName.nullable().optional(),
    })
    .strict(),
]);
export type VerifierBody = z.infer<typeof VerifierBody>;

const iso = z.string().describe("ISO-8601 UTC");

/** A binding as the doors show it: never the secret, only where it comes from. */
export const VerifierView = z
  .object({
    topic: z.string(),
    kind: z.enum(VERIFIER_KINDS),
    /** `"<redacted>"` for a sealed secret, or the env reference as given. */
    secret: z.union([z.literal(REDACTED), envRefSchema]),
    signature_header: z.string().nullable(),
    delivery_header: z.string().nullable(),
    created_by: z.string(),
    created_at: iso,
    updated_at: iso,
  })
  .strict()
  .describe("HookVerifier");
export type VerifierView = z.infer<typeof VerifierView>;

const StoredVerifier = z.object({
  topic: z.string(),
  kind: z.enum(VERIFIER_KINDS),
  secret_sealed: z.string().nullable(),
  secret_env: z.string().nullable(),
  signature_header: z.string().nullable(),
  delivery_header: z.string().nullable(),
  created_by: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type StoredVerifier = z.infer<typeof StoredVerifier>;

const COLUMNS = trusted("topic, kind, secret_sealed, secret_env, signature_header, delivery_header, created_by, created_at, updated_at");

const aad = (topic: string) => `hook-verifier\0${topic}`;

export function parseVerifierRow(raw: Record<string, unknown>): StoredVerifier {
  return validStored(StoredVerifier, raw, "hook_verifiers row");
}

export function verifierView(v: StoredVerifier): VerifierView {
  return {
    topic: v.topic,
    kind: v.kind,
    secret: v.secret_env !== null ? { env: v.secret_env } : REDACTED,
    signature_header: v.signature_header,
    delivery_header: v.delivery_header,
    created_by: v.created_by,
    created_at: v.created_at,
    updated_at: v.updated_at,
  };
}

/** The statement reading topic `topic`'s binding (a fire batches it with the topic's hooks). */
export function topicVerifierStatement(db: D1Database, topic: string): D1PreparedStatement {
  return verifierRead(db, topic).prepared();
}

const verifierRead = (db: D1Database, topic: string) => d1(db)`SELECT ${COLUMNS} FROM hook_verifiers WHERE topic = ${topic}`;

export async function getVerifier(db: D1Database, topic: string): Promise<StoredVerifier | null> {
  return first(StoredVerifier, verifierRead(db, topic));
}

/** Bindings of `topics` (every binding when null), by topic. */
export async function listVerifiers(db: D1Database, topics: string[] | null): Promise<StoredVerifier[]> {
  if (topics !== null && topics.length === 0) return [];
  const where = topics === null ? sql`` : sql`WHERE topic IN (${list(topics)})`;
  return all(StoredVerifier, d1(db)`SELECT ${COLUMNS} FROM hook_verifiers ${where} ORDER BY topic`);
}

/** Who wrote a binding and when (a door: the caller and now; a backup import: the document's). */
export interface BindingStamps {
  created_by: string;
  created_at: string;
  updated_at: string;
}

/**
 * The row binding `body` to topic `topic`, checked and sealed, written nowhere: a Standard Webhooks
 * secret must be base64, an env reference within the secret-reference scope (400 naming the field),
 * a literal one is sealed under SETTINGS_ENCRYPTION_KEY (501 without it).
 */
export async function verifierRecord(env: EnvVars, settings: Settings, topic: string, body: VerifierBody, stamps: BindingStamps): Promise<StoredVerifier> {
  let sealed: string | null = null;
  let envName: string | null = null;
  if (typeof body.secret === "string") {
    if (body.kind === "standard_webhooks" && !standardWebhooksKey(body.secret))
      throw badRequest("invalid body: secret: a Standard Webhooks secret is base64, optionally prefixed whsec_");
    sealed = await sealText(await sealingRing(settings.config), body.secret, aad(topic));
  } else {
    const refused = refusedReferences([{ field: "secret", ref: body.secret }], settings.secretReferences.allowlist, env);
    if (refused.length) throw badRequest(refusedReferencesMessage(refused));
    envName = body.secret.env;
  }
  const generic = body.kind === "hmac_sha256";
  return {
    topic,
    kind: body.kind,
    secret_sealed: sealed,
    secret_env: envName,
    signature_header: generic ? (body.signature_header ?? GENERIC_SIGNATURE_HEADER) : null,
    delivery_header: generic ? (body.delivery_header === undefined ? GENERIC_DELIVERY_HEADER : body.delivery_header) : null,
    ...stamps,
  };
}

/** Creates or replaces topic `row.topic`'s binding (a replace keeps the stored `created_at`). */
export function upsertVerifierStatement(db: D1Database, row: StoredVerifier): D1PreparedStatement {
  return d1(db)`INSERT INTO hook_verifiers (${COLUMNS})
       VALUES (${row.topic}, ${row.kind}, ${row.secret_sealed}, ${row.secret_env}, ${row.signature_header}, ${row.delivery_header}, ${row.created_by}, ${row.created_at}, ${row.updated_at})
       ON CONFLICT (topic) DO UPDATE SET kind = excluded.kind, secret_sealed = excluded.secret_sealed, secret_env = excluded.secret_env,
         signature_header = excluded.signature_header, delivery_header = excluded.delivery_header,
         created_by = excluded.created_by, updated_at = excluded.updated_at`.prepared();
}

/** Binds (or re-binds) topic `topic` (`PUT /api/hooks/topics/{topic}/verifier`). */
export async function putVerifier(
  db: D1Database,
  env: EnvVars,
  settings: Settings,
  topic: string,
  body: VerifierBody,
  createdBy: string,
  nowIso: string,
): Promise<StoredVerifier> {
  const row = await verifierRecord(env, settings, topic, body, { created_by: createdBy, created_at: nowIso, updated_at: nowIso });
  await upsertVerifierStatement(db, row).run();
  return must(await getVerifier(db, topic), "the verifier just written");
}

export async function deleteVerifier(db: D1Database, topic: string): Promise<boolean> {
  return (await run(d1(db)`DELETE FROM hook_verifiers WHERE topic = ${topic}`)).changes > 0;
}

/**
 * The binding's secret in plain text, or null when it cannot be had (the sealing key is gone or
 * rotated out, the sealed value was tampered with, the env var is unset or out of scope): the
 * delivery is then refused, fail closed. The reason is logged, never answered.
 */
export async function openVerifierSecret(v: StoredVerifier, env: EnvVars, settings: Settings): Promise<string | null> {
  if (v.secret_env !== null) {
    try {
      return resolveEnvRef(env, { env: v.secret_env });
    } catch (err) {
      if (err instanceof EnvRefError) {
        console.error(`hooks: topic verifier secret unavailable: ${err.message}`);
        return null;
      }
      throw err;
    }
  }
  const opened = await openSealedVerifierSecret(v, settings);
  if (opened === null)
    console.error("hooks: a topic verifier's sealed secret does not open (SETTINGS_ENCRYPTION_KEY unset, rotated out, or the value was altered)");
  return opened;
}

/**
 * A literal (sealed) secret opened under SETTINGS_ENCRYPTION_KEY (the current key or a previous
 * one); null for an env reference, or when it does not open (no key, rotated out, altered).
 */
export async function openSealedVerifierSecret(v: StoredVerifier, settings: Settings): Promise<string | null> {
  return v.secret_sealed === null ? null : openText(await settingsKeyRing(settings.config), v.secret_sealed, aad(v.topic));
}

export type { VerifierKind };
