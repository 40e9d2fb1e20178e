/**
 * The OAuth authorization code flow with PKCE (RFC 6749 §4.1, RFC 7636), as the connectors doors
 * run it (docs/connectors.md "Connecting"):
 *
 *   begin    → a random `state` (stored only as its SHA-256) and code verifier (sealed, never
 *              shown), and the provider's authorization URL carrying the S256 challenge;
 *   complete → the start taken by its state (single use, unexpired, by its initiator or an admin),
 *              the code exchanged at the token endpoint with the verifier and the client's
 *              credentials, and the tokens installed in the connection's object.
 *
 * One start serves three purposes: a new connection, a reconnect (fresh tokens for the same
 * connection) and a widening of its sub-services (re-consent for more scopes).
 */
import { z } from "zod";
import { connectionStub } from "./rpc";
import type { Env } from "../platform/env";
import { HttpError, badRequest, serverError } from "../platform/http/errors";
import { edgeFetch } from "../platform/net/edge-fetch";
import { checkOutboundUrl } from "../platform/net/address-guard";
import type { ProviderDescriptor } from "../platform/settings/connector-settings";
import type { Settings } from "../platform/settings/settings";
import { clientCredentials, providerNotConfigured } from "./client-credentials";
import { type Caller, type ConnectionRow, ConnectionView, connectionView, getConnection, insertConnection, updateConnection } from "./connections";
import { codeChallengeS256, newCodeVerifier, newState, stateHash } from "./pkce";
import { findProvider, scopesFor } from "./providers";
import { keyRingOf } from "./sealing";
import { type StartPurpose, openVerifier, recordStart, sealVerifier, takeStart } from "./starts";
import { TOKEN_TIMEOUT_MS, requestToken } from "./token-endpoint";

export const AuthorizationView = z.object({
  /** Send the user's browser here; the provider redirects back to CONNECTORS_OAUTH_REDIRECT_URI with `code` and `state`. */
  authorization_url: z.string(),
  state: z.string(),
  expires_at: z.string(),
  purpose: z.enum(["connect", "reconnect", "widen"]),
  provider_id: z.string(),
  sub_services: z.array(z.string()),
  /** The connection a reconnect or widening is for; null for a new connection (minted at completion). */
  connection_id: z.string().nullable(),
});
export type AuthorizationView = z.infer<typeof AuthorizationView>;

export const CompletionView = z.object({
  /** What the completion did: a new connection, fresh tokens for one, or its sub-services widened. */
  kind: z.enum(["connected", "reconnected", "widened"]),
  connection: ConnectionView,
});
export type CompletionView = z.infer<typeof CompletionView>;

const KIND_OF: Record<StartPurpose, CompletionView["kind"]> = { connect: "connected", reconnect: "reconnected", widen: "widened" };

/** The 400 of any completion whose state is unknown, expired, already used or another caller's: one answer for all, so a state's fate is not revealed. */
export const stateRefused = () => new HttpError(400, "invalid body: state: unknown, expired or already used", "oauth-state-invalid");

export interface BeginInput {
  purpose: StartPurpose;
  provider: ProviderDescriptor;
  sub_services: string[];
  connection_id: string | null;
}

/** Starts an authorization and answers where to send the user's browser. */
export async function beginAuthorization(env: Env, settings: Settings, caller: Caller, input: BeginInput, nowMs: number): Promise<AuthorizationView> {
  const { provider } = input;
  const oauth = provider.oauth;
  if (provider.kind !== "oauth" || !oauth) throw badRequest("invalid body: provider_id: the provider does not use OAuth, so it has no connection to make");
  const creds = clientCredentials(env, provider);
  if (!creds.ok) throw providerNotConfigured(creds.env_var);
  const c = settings.connectors;
  if (!c.redirectUri) throw providerNotConfigured("CONNECTORS_OAUTH_REDIRECT_URI");
  // The token endpoint is ours to call at completion: refuse now rather than after the user consented.
  const verdict = checkOutboundUrl(oauth.token_endpoint, settings.outbound);
  if (!verdict.ok)
    throw serverError(
      "connector-provider-not-configured",
      `connector provider not configured: its token endpoint is refused by the outbound address guard: ${verdict.reason}`,
      { extra: { env_var: "CONNECTORS_PROVIDERS" } },
    );

  const ring = await keyRingOf(c.keys);
  const state = newState();
  const verifier = newCodeVerifier();
  const hash = await stateHash(state);
  const expiresAt = nowMs + c.startTtlSeconds * 1000;
  await recordStart(
    env.DB,
    {
      state_hash: hash,
      purpose: input.purpose,
      connection_id: input.connection_id,
      initiator_user_id: caller.user_id,
      provider_id: provider.id,
      sub_services: input.sub_services,
      redirect_uri: c.redirectUri,
      sealed_verifier: await sealVerifier(ring, hash, verifier),
      created_at: nowMs,
      expires_at: expiresAt,
    },
    nowMs,
  );
  const url = new URL(oauth.authorization_endpoint);
  for (const [k, v] of Object.entries(oauth.authorize_params)) url.searchParams.set(k, v);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", creds.client_id);
  url.searchParams.set("redirect_uri", c.redirectUri);
  url.searchParams.set("scope", scopesFor(provider, input.sub_services).join(" "));
  url.searchParams.set("state", state);
  url.searchParams.set("code_challenge", await codeChallengeS256(verifier));
  url.searchParams.set("code_challenge_method", "S256");
  return {
    authorization_url: url.toString(),
    state,
    expires_at: new Date(expiresAt).toISOString(),
    purpose: input.purpose,
    provider_id: provider.id,
    sub_services: [...input.sub_services],
    connection_id: input.connection_id,
  };
}

/** Completes an authorization: exchanges the code and installs the tokens. Every failure is a 400 (platform-facts D) except an unconfigured provider (501). */
export async function completeAuthorization(
  env: Env,
  settings: Settings,
  caller: Caller,
  body: { state: string; code: string },
  nowMs: number,
): Promise<CompletionView> {
  const start = await takeStart(env.DB, await stateHash(body.state), caller, nowMs);
  if (!start) throw stateRefused();
  const provider = findProvider(settings.connectors.providers, start.provider_id);
  if (!provider?.oauth)
    throw new HttpError(400, "the authorization's provider is no longer configured (CONNECTORS_PROVIDERS); start again", "oauth-provider-gone");
  const creds = clientCredentials(env, provider);
  if (!creds.ok) throw providerNotConfigured(creds.env_var);
  const ring = await keyRingOf(settings.connectors.keys);
  const verifier = await openVerifier(ring, start);
  if (verifier === null) throw new HttpError(400, "the authorization was sealed with a key the service no longer has; start again", "oauth-state-invalid");
  let existing: ConnectionRow | null = null;
  if (start.connection_id) {
    existing = await getConnection(env.DB, start.connection_id);
    if (!existing) throw new HttpError(400, "the connection this authorization was for has been deleted", "oauth-connection-gone");
  }

  const r = await requestToken(
    edgeFetch,
    {
      token_endpoint: provider.oauth.token_endpoint,
      client_id: creds.client_id,
      client_secret: creds.client_secret,
      client_auth: provider.oauth.client_auth,
      allow_private_hosts: settings.outbound.allowPrivateHosts,
      timeout_ms: TOKEN_TIMEOUT_MS,
    },
    { grant_type: "authorization_code", code: body.code, redirect_uri: start.redirect_uri, code_verifier: verifier },
  );
  if (!r.ok) throw new HttpError(400, `the code could not be exchanged: ${r.message}`, "oauth-exchange-failed");

  const nowIso = new Date(nowMs).toISOString();
  const scopes = scopesFor(provider, start.sub_services);
  const connectionId = existing?.connection_id ?? crypto.randomUUID();
  const stub = connectionStub(env, connectionId);
  const health = await stub.install(connectionId, provider.id, r.grant, ring, nowMs);
  let row: ConnectionRow | null;
  if (!existing) {
    row = {
      connection_id: connectionId,
      owner_user_id: start.initiator_user_id,
      provider_id: provider.id,
      sub_services: start.sub_services,
      scopes,
      created_at: nowIso,
      updated_at: nowIso,
    };
    try {
      await insertConnection(env.DB, row);
    } catch (err) {
      // No listing row, no connection: the tokens just installed must not outlive it.
      await stub.erase();
      throw err;
    }
  } else {
    row = await updateConnection(env.DB, connectionId, start.sub_services, scopes, nowIso);
    if (!row) {
      await stub.erase();
      throw new HttpError(400, "the connection this authorization was for has been deleted", "oauth-connection-gone");
    }
  }
  return { kind: KIND_OF[start.purpose], connection: connectionView(row, health) };
}

/** The provider of a start door's body, or a 400 naming the field. */
export function providerFor(settings: Settings, providerId: string): ProviderDescriptor {
  const provider = findProvider(settings.connectors.providers, providerId);
  if (!provider) throw badRequest("invalid body: provider_id: no such provider (GET /api/connectors/providers lists them)");
  return provider;
}
