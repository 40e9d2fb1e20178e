/**
 * Secret values for MCP servers' `{"env": "NAME"}` headers, written through
 * `POST /api/mcp-config/secret-env` (docs/mcp.md "Secret env values") so an operator can give a
 * server its token without redeploying. A value is sealed with SETTINGS_ENCRYPTION_KEY
 * (AES-256-GCM, the runtime settings' sealing; AAD binds it to its name) and never shown again.
 * A server's reference resolves here first, then in the Worker's env, and only for names inside
 * the secret-reference scope (`SECRET_*` or SECRET_REFERENCE_ALLOWLIST), checked at write and at
 * every resolution.
 *
 * A stored value is bound to the origins it may be sent to, decided when it is written: the
 * origins the writer names, and those of the MCP servers that reference the name at that moment.
 * It resolves only for a server at one of them. Reads never show it, so without the binding any
 * admin could declare a server at its own host referencing the name and receive a value it never
 * knew; to send it to a new origin, whoever knows it writes it again.
 *
 * Whatever its source, a reference's value goes only to an origin `SECRET_REFERENCE_ORIGINS` (env
 * only) binds its name to: a stored value is bound within those origins when written, and every
 * resolution checks them again (resolveCallHeaders).
 */
import { z } from "zod";
import { sealText, openText, sealingRing, settingsKeyRing } from "../config/secrets";
import { type EnvVars, envVar } from "../platform/env";
import { badRequest } from "../platform/http/errors";
import { all, d1, list, run } from "../platform/persistence/d1";
import type { ConfigSettings } from "../platform/settings/config-settings";
import {
  REFERENCE_RULE,
  SECRET_REFERENCE_ALLOWLIST_SETTING,
  SECRET_REFERENCE_ORIGINS_SETTING,
  isReferenceable,
  referenceMayGoTo,
  splitAllowlist,
} from "../platform/settings/secret-references";
import type { Settings } from "../platform/settings/settings";
import { EnvRefError, type HeaderSpec, headerReferences } from "../outbound/env-refs";
import { urlOrigin } from "../outbound/origin-lock";
import { listMcpServers } from "./store";

/** What values sealed without an origin binding were sealed under (the value alone): they do not resolve. */
const legacyAad = (name: string) => `mcp-secret-env\0${name}`;
/** A bound value: `{value, origins}` as JSON. */
const aad = (name: string) => `mcp-secret-env-bound\0${name}`;

const NameRow = z.object({ name: z.string() });
const SealedRow = z.object({ name: z.string(), sealed: z.string() });

const BoundValue = z.object({ value: z.string(), origins: z.array(z.string()) }).strict();

/** Most origins one value may be bound to. */
export const MAX_SECRET_ENV_ORIGINS = 16;

/** Most values one deployment stores (each is one small row). */
export const MAX_SECRET_ENV_VALUES = 500;

/**
 * Stores (or, with `value: null`, removes) a sealed value, bound to `origins` (URLs; their origins
 * count) and to the origins of the MCP servers that reference `name` now; answers whether a value
 * is now set. Only origins `SECRET_REFERENCE_ORIGINS` binds `name` to count: a name it does not bind
 * is a 400 naming `name`, a named origin outside its binding a 400 naming `origins[i]`, and a
 * referencing server outside it is left out. A value with no origin to go to is a 400 naming `origins`.
 */
export async function writeSecretEnv(
  db: D1Database,
  settings: Settings,
  env: EnvVars,
  name: string,
  value: string | null,
  nowIso: string,
  origins: readonly string[] = [],
): Promise<{ name: string; set: boolean; updated_at: string }> {
  if (!isReferenceable(name, settings.secretReferences.allowlist, env)) {
    throw badRequest(`invalid body: name: outside the secret-reference scope; ${REFERENCE_RULE}`);
  }
  if (value === null) {
    await run(d1(db)`DELETE FROM mcp_secret_env WHERE name = ${name}`);
    return { name, set: false, updated_at: nowIso };
  }
  const bindings = settings.referenceOrigins;
  if (!Object.hasOwn(bindings, name)) {
    throw badRequest(
      `invalid body: name: ${SECRET_REFERENCE_ORIGINS_SETTING} binds no origin to this name, so its value could be sent nowhere; the operator binds it (env only)`,
    );
  }
  const outside = origins.findIndex((url) => !referenceMayGoTo(name, url, bindings));
  if (outside >= 0) throw badRequest(`invalid body: origins[${outside}]: not an origin ${SECRET_REFERENCE_ORIGINS_SETTING} binds this name to`);
  const referencing = (await listMcpServers(db))
    .filter((s) => headerReferences(s.spec.config.headers, "").some((r) => r.ref.env === name) && referenceMayGoTo(name, s.spec.config.url, bindings))
    .map((s) => urlOrigin(s.spec.config.url));
  const bound = [...new Set([...origins.map(urlOrigin), ...referencing].filter((o): o is string => o !== null))].sort();
  if (bound.length === 0) {
    throw badRequest(
      "invalid body: origins: no MCP server references this name yet; name the origins (the URLs of the servers) the value may be sent to, or declare the server first",
    );
  }
  if (bound.length > MAX_SECRET_ENV_ORIGINS) throw badRequest(`invalid body: origins: a value may go to at most ${MAX_SECRET_ENV_ORIGINS} origins`);
  const ring = await sealingRing(settings.config);
  const sealed = await sealText(ring, JSON.stringify({ value, origins: bound }), aad(name));
  // The cap rides in the write, so concurrent writers cannot overshoot it.
  const meta = await run(
    d1(db)`INSERT INTO mcp_secret_env (name, sealed, updated_at)
       SELECT ${name}, ${sealed}, ${nowIso} WHERE EXISTS (SELECT 1 FROM mcp_secret_env WHERE name = ${name}) OR (SELECT COUNT(*) FROM mcp_secret_env) < ${MAX_SECRET_ENV_VALUES}
       ON CONFLICT(name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
  );
  if ((meta.changes ?? 0) === 0) throw badRequest(`invalid body: at most ${MAX_SECRET_ENV_VALUES} secret env values may be stored; remove one first`);
  return { name, set: true, updated_at: nowIso };
}

/** The names that have a stored value. */
export async function storedSecretEnvNames(db: D1Database): Promise<Set<string>> {
  return new Set((await all(NameRow, d1(db)`SELECT name FROM mcp_secret_env`)).map((r) => r.name));
}

/**
 * The Worker env as an MCP server at `origin` sees it: the stored values of the names `headers`
 * references laid over the env. A stored value that no longer opens (the key rotated away) is left
 * out, so the reference falls back to the env (and fails naming the variable when that is unset).
 * A stored value bound to other origins, or sealed without a binding, fails the reference
 * (EnvRefError naming the variable and what to do), never reaching this server.
 */
export async function envWithSecretValues(db: D1Database, config: ConfigSettings, env: EnvVars, headers: HeaderSpec, origin: string | null): Promise<EnvVars> {
  const names = [...new Set(headerReferences(headers, "").map((r) => r.ref.env))];
  if (!names.length) return env;
  const results = await all(SealedRow, d1(db)`SELECT name, sealed FROM mcp_secret_env WHERE name IN (${list(names)})`);
  if (!results.length) return env;
  const ring = await settingsKeyRing(config);
  const values: Record<string, string> = {};
  for (const r of results) {
    // The scope is checked again: a name the allowlist dropped since it was written never resolves.
    if (!isReferenceable(r.name, splitAllowlist(envVar(env, SECRET_REFERENCE_ALLOWLIST_SETTING)), env)) {
      throw new EnvRefError(r.name, `env var ${r.name} referenced by the declaration may not be referenced (${REFERENCE_RULE})`);
    }
    const plain = await openText(ring, r.sealed, aad(r.name));
    if (plain === null) {
      if ((await openText(ring, r.sealed, legacyAad(r.name))) !== null) {
        throw new EnvRefError(
          r.name,
          `the stored value of env var ${r.name} predates origin binding; write it again (POST /api/mcp-config/secret-env) to send it to this server`,
        );
      }
      continue;
    }
    const bound = BoundValue.safeParse(JSON.parse(plain));
    if (!bound.success) continue;
    if (origin === null || !bound.data.origins.includes(origin)) {
      throw new EnvRefError(
        r.name,
        `the stored value of env var ${r.name} is bound to other origins than this server's; write it again (POST /api/mcp-config/secret-env) to send it here`,
      );
    }
    values[r.name] = bound.data.value;
  }
  return { ...(env as Record<string, unknown>), ...values };
}
