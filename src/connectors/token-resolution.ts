/**
 * Resolving a connection reference at call time (an HTTP tool's or HTTP agent's header): one call
 * to the connection's object, a second only when the token must be refreshed first, and no D1
 * statement. The provider's token endpoint and client credentials come from the settings and env
 * of whoever dispatches (the Worker or a thread object), so the object holds no client secret.
 *
 * The token goes only to an origin its provider lists in `api_origins` (src/connectors/token-origins.ts):
 * that is checked as soon as the object names the connection's provider, before any refresh and
 * before the caller sends anything.
 *
 * Failures are ConnectionRefErrors whose messages name the rule or the env var, never a token, a
 * client secret or a URL; the dispatcher turns them into a failed tool call.
 */
import { type RefreshContext, connectionStub } from "./rpc";
import type { Env } from "../platform/env";
import type { Settings } from "../platform/settings/settings";
import { clientCredentials } from "./client-credentials";
import { type ConnectionRef, renderConnectionHeader } from "../outbound/header-ref";
import { lendingRefusal } from "./token-origins";
import { findProvider } from "./providers";
import { keyRingOf } from "./sealing";
import { TOKEN_TIMEOUT_MS } from "./token-endpoint";

export class ConnectionRefError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConnectionRefError";
  }
}

export interface ResolveContext {
  env: Env;
  settings: Settings;
  now: () => Date;
}

/**
 * A fresh access token of `connectionId` (refreshed first when it expires within the skew), for a
 * request to `url`; refused when `url`'s origin is not among its provider's `api_origins`.
 */
export async function connectionAccessToken(ctx: ResolveContext, connectionId: string, url: string): Promise<string> {
  const c = ctx.settings.connectors;
  if (!c.storeUrl) throw new ConnectionRefError("a connection reference needs the connector store (set CONNECTORS_STORE_URL)");
  const keys = await keyRingOf(c.keys);
  const skewMs = c.refreshSkewSeconds * 1000;
  const nowMs = ctx.now().getTime();
  const stub = connectionStub(ctx.env, connectionId);
  try {
    let answer = await stub.accessToken(keys, skewMs, nowMs);
    const providerId = answer.provider_id;
    if (providerId !== null) {
      const refusal = lendingRefusal(c.providers, providerId, url);
      if (refusal) throw new ConnectionRefError(`${refusal}; the token was not sent`);
    }
    if (!answer.ok && answer.reason === "needs_refresh") {
      const provider = providerId ? findProvider(c.providers, providerId) : null;
      if (!provider?.oauth) throw new ConnectionRefError("the connection's provider is no longer configured (CONNECTORS_PROVIDERS)");
      const creds = clientCredentials(ctx.env, provider);
      if (!creds.ok) throw new ConnectionRefError(`the connection's token needs a refresh, but env var ${creds.env_var} of its provider is not set`);
      const refresh: RefreshContext = {
        provider_id: provider.id,
        token_endpoint: provider.oauth.token_endpoint,
        client_id: creds.client_id,
        client_secret: creds.client_secret,
        client_auth: provider.oauth.client_auth,
        allow_private_hosts: ctx.settings.outbound.allowPrivateHosts,
        timeout_ms: TOKEN_TIMEOUT_MS,
      };
      answer = await stub.refreshedToken(refresh, keys, skewMs, nowMs);
    }
    if (!answer.ok) throw new ConnectionRefError(answer.reason === "missing" ? "connection not found" : answer.message);
    // A reconnect between the two calls answers for the row it installed: judged again if its provider differs.
    if (answer.provider_id !== providerId) {
      const refusal = lendingRefusal(c.providers, answer.provider_id, url);
      if (refusal) throw new ConnectionRefError(`${refusal}; the token was not sent`);
    }
    return answer.access_token;
  } catch (err) {
    if (err instanceof ConnectionRefError) throw err;
    console.error("connector token resolution failed:", err);
    throw new ConnectionRefError("the connection's token could not be read (its object failed)");
  }
}

/** The header value for `ref` on a request to `url`: its format around a fresh access token. */
export async function connectionHeaderValue(ctx: ResolveContext, ref: ConnectionRef, url: string): Promise<string> {
  return renderConnectionHeader(ref, await connectionAccessToken(ctx, ref.connection, url));
}
