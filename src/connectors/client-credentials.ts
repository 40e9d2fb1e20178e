/**
 * A provider's client credentials, read at use from the env vars its descriptor names (the
 * document holds names, never values). An unset one is the provider not being configured: the
 * doors answer 501 `connector-provider-not-configured` with the variable's name in `env_var`
 * (platform-facts D); a token resolution at dispatch fails the tool naming the variable.
 */
import { type EnvVars, envVar } from "../platform/env";
import { type HttpError, serverError } from "../platform/http/errors";
import type { ProviderDescriptor } from "../platform/settings/connector-settings";

export type ClientCredentials = { ok: true; client_id: string; client_secret: string } | { ok: false; env_var: string };

export function clientCredentials(env: EnvVars, provider: ProviderDescriptor): ClientCredentials {
  const oauth = provider.oauth;
  if (!oauth) return { ok: false, env_var: "CONNECTORS_PROVIDERS" };
  const read = (name: string) => {
    const v = envVar(env, name);
    return typeof v === "string" && v.trim() !== "" ? v.trim() : null;
  };
  const client_id = read(oauth.client_id_env);
  if (!client_id) return { ok: false, env_var: oauth.client_id_env };
  const client_secret = read(oauth.client_secret_env);
  if (!client_secret) return { ok: false, env_var: oauth.client_secret_env };
  return { ok: true, client_id, client_secret };
}

/** The 501 a door answers for a provider whose credentials are unset. */
export function providerNotConfigured(envVarName: string): HttpError {
  return serverError("connector-provider-not-configured", `connector provider not configured (set ${envVarName})`, { extra: { env_var: envVarName } });
}
