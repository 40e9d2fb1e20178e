/**
 * Secrets by reference: a declaration stores `{"env": "VAR"}`, never the secret, and the value
 * is read from the Worker's env at call time. Resolved values must never reach a read, an error
 * message or a log line; views show the reference (or a redaction for literal values).
 *
 * A header value may also name a connector connection, `{"connection": "<id>", "format"?}`
 * (src/outbound/header-ref.ts): its access token is resolved at call time from the connection's
 * object (resolveCallHeaders), never stored with the declaration.
 *
 * A referenced value leaves the service only for an origin the deployment bound its name to
 * (`SECRET_REFERENCE_ORIGINS`): the declarer chooses the URL, so without the binding an admin could
 * declare a tool at its own host and receive the deployment's secret. Checked at declaration (400
 * naming the field) and again before each send.
 */
import { z } from "zod";
import { type ConnectionRef, connectionRefSchema, connectionRefView } from "./header-ref";
import { type EnvVars, envVar } from "../platform/env";
import { badRequest } from "../platform/http/errors";
import {
  ORIGINS_RULE,
  REFERENCE_RULE,
  type ReferenceOrigins,
  SECRET_REFERENCE_ALLOWLIST_SETTING,
  SECRET_REFERENCE_ORIGINS_SETTING,
  isReferenceable,
  referenceMayGoTo,
  referenceOriginsOf,
  splitAllowlist,
} from "../platform/settings/secret-references";
import type { Settings } from "../platform/settings/settings";

export const envRefSchema = z
  .object({
    env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, { message: "must name an env var (letters, digits, _)" }),
  })
  .strict();
export type EnvRef = z.infer<typeof envRefSchema>;

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;

export const headerValueSchema = z.union([
  z
    .string()
    .max(8192)
    .refine((v) => !/[\r\n\0]/.test(v), { message: "must not contain CR, LF or NUL" }),
  envRefSchema,
  connectionRefSchema,
]);

export const headersSchema = z.record(z.string(), headerValueSchema).superRefine((h, ctx) => {
  const names = Object.keys(h);
  if (names.length > 32) ctx.addIssue({ code: "custom", message: "at most 32 headers" });
  for (const name of names) {
    if (!HEADER_NAME.test(name)) ctx.addIssue({ code: "custom", path: [name], message: "not a valid header name" });
  }
});
export type HeaderSpec = z.infer<typeof headersSchema>;

/** What a read shows for a literal header value: the value itself is write-only. */
export const REDACTED = "<redacted>";

/** The declaration's headers as any read shows them: env and connection references as-is, literals redacted. */
export function redactHeaders(headers: HeaderSpec): Record<string, string | EnvRef | ConnectionRef> {
  const out: Record<string, string | EnvRef | ConnectionRef> = {};
  for (const [name, v] of Object.entries(headers)) out[name] = typeof v === "string" ? REDACTED : "env" in v ? { env: v.env } : connectionRefView(v);
  return out;
}

/** A reference that cannot be resolved; its message names the variable, never a value. */
export class EnvRefError extends Error {
  constructor(
    readonly variable: string,
    message = `env var ${variable} referenced by the declaration is not set`,
  ) {
    super(message);
    this.name = "EnvRefError";
  }
}

/**
 * The declaration's references that fall outside the secret-reference scope, as the fields that
 * hold them (e.g. `headers.authorization`, `config.api_key`), for a 400 that names the field and
 * never the variable. Empty when every reference may be resolved.
 */
export function refusedReferences(refs: Array<{ field: string; ref: EnvRef }>, allowlist: readonly string[], env?: EnvVars): string[] {
  return refs.filter(({ ref }) => !isReferenceable(ref.env, allowlist, env)).map(({ field }) => field);
}

/** The env references among `headers`, each with the field that holds it under `prefix`. */
export function headerReferences(headers: HeaderSpec, prefix: string): Array<{ field: string; ref: EnvRef }> {
  return Object.entries(headers).flatMap(([name, v]) => (typeof v === "string" || !("env" in v) ? [] : [{ field: `${prefix}.${name}`, ref: v }]));
}

/** The connection references among `headers`, each with the field that holds it under `prefix`. */
export function headerConnections(headers: HeaderSpec, prefix: string): Array<{ field: string; connection: string }> {
  return Object.entries(headers).flatMap(([name, v]) =>
    typeof v !== "string" && "connection" in v ? [{ field: `${prefix}.${name}`, connection: v.connection }] : [],
  );
}

/** The 400 message for refused references (body fields named, values never). */
export function refusedReferencesMessage(fields: string[]): string {
  return `invalid body: ${fields.join(", ")}: ${fields.length > 1 ? "reference env vars" : "references an env var"} outside the secret-reference scope; ${REFERENCE_RULE}`;
}

/** The references among `refs` whose names `origins` does not bind to `url`'s origin, as their fields. */
export function unboundReferences(refs: Array<{ field: string; ref: EnvRef }>, origins: ReferenceOrigins, url: string): string[] {
  return refs.filter(({ ref }) => !referenceMayGoTo(ref.env, url, origins)).map(({ field }) => field);
}

/** The 400 message for references whose value may not go to the declaration's URL (fields named, never a variable or origin). */
export function unboundReferencesMessage(fields: string[]): string {
  return `invalid body: ${fields.join(", ")}: ${fields.length > 1 ? "reference env vars" : "references an env var"} that may not be sent to this URL's origin; ${ORIGINS_RULE}`;
}

/**
 * The declaration-time checks of the env references a declaration sends to `url`: every name inside
 * the secret-reference scope (400 naming the fields otherwise), then every name bound to `url`'s
 * origin by `SECRET_REFERENCE_ORIGINS` (400 naming the fields otherwise).
 */
export function assertReferencesMayGo(refs: Array<{ field: string; ref: EnvRef }>, url: string, settings: Settings, env: EnvVars): void {
  const refused = refusedReferences(refs, settings.secretReferences.allowlist, env);
  if (refused.length) throw badRequest(refusedReferencesMessage(refused));
  const unbound = unboundReferences(refs, settings.referenceOrigins, url);
  if (unbound.length) throw badRequest(unboundReferencesMessage(unbound));
}

/**
 * Reads a referenced secret for use inside the service (a verifier's secret, which never leaves):
 * unset or non-string (e.g. a binding) is an EnvRefError, and so is a name outside the
 * secret-reference scope. The scope was checked at declaration; checking it again here means a
 * stored reference never resolves after the allowlist narrowed. A value that is sent somewhere is
 * read with resolveEnvRefFor.
 */
export function resolveEnvRef(env: EnvVars, ref: EnvRef): string {
  assertInScope(env, ref);
  return valueOf(env, ref);
}

function assertInScope(env: EnvVars, ref: EnvRef): void {
  if (!isReferenceable(ref.env, splitAllowlist(envVar(env, SECRET_REFERENCE_ALLOWLIST_SETTING)), env)) {
    throw new EnvRefError(ref.env, `env var ${ref.env} referenced by the declaration may not be referenced (${REFERENCE_RULE})`);
  }
}

function valueOf(env: EnvVars, ref: EnvRef): string {
  const v = envVar(env, ref.env);
  if (typeof v !== "string" || v === "") throw new EnvRefError(ref.env);
  return v;
}

/**
 * Reads a referenced secret that is about to be sent to `url`: as resolveEnvRef, and only when
 * `SECRET_REFERENCE_ORIGINS` binds the name to `url`'s origin now (checked at declaration too; a
 * binding narrowed since then stops the value before anything is sent).
 */
export function resolveEnvRefFor(env: EnvVars, ref: EnvRef, url: string): string {
  assertInScope(env, ref);
  const origins = referenceOriginsOf(env);
  if (!referenceMayGoTo(ref.env, url, origins)) {
    const why = Object.hasOwn(origins, ref.env) ? "binds it to other origins" : "binds no origin to it";
    throw new EnvRefError(
      ref.env,
      `env var ${ref.env} referenced by the declaration may not be sent to this URL's origin (${SECRET_REFERENCE_ORIGINS_SETTING} ${why})`,
    );
  }
  return valueOf(env, ref);
}

/**
 * Resolves literal and env-referenced headers sent to `url` (synchronous). A connection reference
 * needs its object, so only resolveCallHeaders resolves it; meeting one here is a caller's bug.
 */
export function resolveHeaders(env: EnvVars, headers: HeaderSpec, url: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(headers)) {
    if (typeof v === "string") out[name] = v;
    else if ("env" in v) out[name] = resolveEnvRefFor(env, v, url);
    else throw new Error("a connection header needs resolveCallHeaders");
  }
  return out;
}

/**
 * Resolves every header of a call to `url` at call time: literals, env references (bound to `url`'s
 * origin), and connection references through `connection` (src/connectors/token-resolution.ts,
 * which checks its provider's origins and may refresh the token).
 */
export async function resolveCallHeaders(
  env: EnvVars,
  headers: HeaderSpec,
  url: string,
  connection: (ref: ConnectionRef) => Promise<string>,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(headers)) out[name] = typeof v === "string" ? v : "env" in v ? resolveEnvRefFor(env, v, url) : await connection(v);
  return out;
}
