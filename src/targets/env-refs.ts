/**
 * Secrets by reference: a declaration stores `{"env": "VAR"}`, never the secret, and the value
 * is read from the Worker's env at call time. Resolved values must never reach a read, an error
 * message or a log line; views show the reference (or a redaction for literal values).
 *
 * A header value may also name a connector connection, `{"connection": "<id>", "format"?}`
 * (src/connectors/header-ref.ts): its access token is resolved at call time from the connection's
 * object (resolveCallHeaders), never stored with the declaration.
 */
import { z } from "zod";
import { type ConnectionRef, connectionRefSchema, connectionRefView } from "../connectors/header-ref";
import { type EnvVars, envVar } from "../env";
import { REFERENCE_RULE, SECRET_REFERENCE_ALLOWLIST_SETTING, isReferenceable, splitAllowlist } from "../settings/secret-references";

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

export const headersSchema = z
  .record(z.string(), headerValueSchema)
  .superRefine((h, ctx) => {
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
  return Object.entries(headers).flatMap(([name, v]) => (typeof v !== "string" && "connection" in v ? [{ field: `${prefix}.${name}`, connection: v.connection }] : []));
}

/** The 400 message for refused references (body fields named, values never). */
export function refusedReferencesMessage(fields: string[]): string {
  return `invalid body: ${fields.join(", ")}: ${fields.length > 1 ? "reference env vars" : "references an env var"} outside the secret-reference scope; ${REFERENCE_RULE}`;
}

/**
 * Reads a referenced secret; unset or non-string (e.g. a binding) is an EnvRefError, and so is
 * a name outside the secret-reference scope. The scope was checked at declaration; checking it
 * again here means a stored reference never resolves after the allowlist narrowed.
 */
export function resolveEnvRef(env: EnvVars, ref: EnvRef): string {
  if (!isReferenceable(ref.env, splitAllowlist(envVar(env, SECRET_REFERENCE_ALLOWLIST_SETTING)), env)) {
    throw new EnvRefError(ref.env, `env var ${ref.env} referenced by the declaration may not be referenced (${REFERENCE_RULE})`);
  }
  const v = envVar(env, ref.env);
  if (typeof v !== "string" || v === "") throw new EnvRefError(ref.env);
  return v;
}

/**
 * Resolves literal and env-referenced headers (synchronous). A connection reference needs its
 * object, so only resolveCallHeaders resolves it; meeting one here is a caller's bug.
 */
export function resolveHeaders(env: EnvVars, headers: HeaderSpec): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(headers)) {
    if (typeof v === "string") out[name] = v;
    else if ("env" in v) out[name] = resolveEnvRef(env, v);
    else throw new Error("a connection header needs resolveCallHeaders");
  }
  return out;
}

/**
 * Resolves every header at call time: literals, env references, and connection references
 * through `connection` (src/connectors/token-resolution.ts), which may refresh the token.
 */
export async function resolveCallHeaders(env: EnvVars, headers: HeaderSpec, connection: (ref: ConnectionRef) => Promise<string>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(headers)) out[name] = typeof v === "string" ? v : "env" in v ? resolveEnvRef(env, v) : await connection(v);
  return out;
}
