/**
 * Secret values for MCP servers' `{"env": "NAME"}` headers, written through
 * `POST /api/mcp-config/secret-env` (docs/mcp.md "Secret env values") so an operator can give a
 * server its token without redeploying. A value is sealed with SETTINGS_ENCRYPTION_KEY
 * (AES-256-GCM, the runtime settings' sealing; AAD binds it to its name) and never shown again.
 * A server's reference resolves here first, then in the Worker's env, and only for names inside
 * the secret-reference scope (`SECRET_*` or SECRET_REFERENCE_ALLOWLIST), checked at write and at
 * every resolution.
 */
import { sealText, openText, sealingRing, settingsKeyRing } from "../config/secrets";
import { type EnvVars, envVar } from "../env";
import { badRequest } from "../http/errors";
import type { ConfigSettings } from "../settings/config-settings";
import { REFERENCE_RULE, SECRET_REFERENCE_ALLOWLIST_SETTING, isReferenceable, splitAllowlist } from "../settings/secret-references";
import type { Settings } from "../settings/settings";
import { EnvRefError, type HeaderSpec, headerReferences } from "../targets/env-refs";

const aad = (name: string) => `mcp-secret-env\0${name}`;

/** Most values one deployment stores (each is one small row). */
export const MAX_SECRET_ENV_VALUES = 500;

/** Stores (or, with `value: null`, removes) a sealed value; answers whether a value is now set. */
export async function writeSecretEnv(db: D1Database, settings: Settings, env: EnvVars, name: string, value: string | null, nowIso: string): Promise<{ name: string; set: boolean; updated_at: string }> {
  if (!isReferenceable(name, settings.secretReferences.allowlist, env)) {
    throw badRequest(`invalid body: name: outside the secret-reference scope; ${REFERENCE_RULE}`);
  }
  if (value === null) {
    await db.prepare("DELETE FROM mcp_secret_env WHERE name = ?").bind(name).run();
    return { name, set: false, updated_at: nowIso };
  }
  const ring = await sealingRing(settings.config);
  const sealed = await sealText(ring, value, aad(name));
  // The cap rides in the write, so concurrent writers cannot overshoot it.
  const r = await db
    .prepare(
      `INSERT INTO mcp_secret_env (name, sealed, updated_at)
       SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM mcp_secret_env WHERE name = ?1) OR (SELECT COUNT(*) FROM mcp_secret_env) < ?4
       ON CONFLICT(name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
    )
    .bind(name, sealed, nowIso, MAX_SECRET_ENV_VALUES)
    .run();
  if ((r.meta.changes ?? 0) === 0) throw badRequest(`invalid body: at most ${MAX_SECRET_ENV_VALUES} secret env values may be stored; remove one first`);
  return { name, set: true, updated_at: nowIso };
}

/** The names that have a stored value. */
export async function storedSecretEnvNames(db: D1Database): Promise<Set<string>> {
  const { results } = await db.prepare("SELECT name FROM mcp_secret_env").all<{ name: string }>();
  return new Set(results.map((r) => r.name));
}

/**
 * The Worker env as an MCP server's references see it: the stored values of the names `headers`
 * references laid over the env. A stored value that no longer opens (the key rotated away) is left
 * out, so the reference falls back to the env (and fails naming the variable when that is unset).
 */
export async function envWithSecretValues(db: D1Database, config: ConfigSettings, env: EnvVars, headers: HeaderSpec): Promise<EnvVars> {
  const names = [...new Set(headerReferences(headers, "").map((r) => r.ref.env))];
  if (!names.length) return env;
  const { results } = await db
    .prepare(`SELECT name, sealed FROM mcp_secret_env WHERE name IN (${names.map(() => "?").join(", ")})`)
    .bind(...names)
    .all<{ name: string; sealed: string }>();
  if (!results.length) return env;
  const ring = await settingsKeyRing(config);
  const values: Record<string, string> = {};
  for (const r of results) {
    // The scope is checked again: a name the allowlist dropped since it was written never resolves.
    if (!isReferenceable(r.name, splitAllowlist(envVar(env, SECRET_REFERENCE_ALLOWLIST_SETTING)), env)) {
      throw new EnvRefError(r.name, `env var ${r.name} referenced by the declaration may not be referenced (${REFERENCE_RULE})`);
    }
    const plain = await openText(ring, r.sealed, aad(r.name));
    if (plain !== null) values[r.name] = plain;
  }
  return { ...(env as Record<string, unknown>), ...values };
}
