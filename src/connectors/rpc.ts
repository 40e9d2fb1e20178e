/**
 * The ConnectorConnection objects' RPC contract (docs/connectors.md). One object per
 * connection (`idFromName(connection_id)`) holds that connection's tokens, sealed with AES-256-GCM,
 * and nothing else: the listing (owner, provider, sub-services) is in D1. Resolving a token at tool
 * dispatch is one call to this object (two when it must be refreshed) and no D1 statement, and
 * refreshes of one connection are serialized here.
 *
 * The object reads no settings of its own: the caller hands it the key ring and, to refresh, the
 * provider's token endpoint and client credentials. So the Worker's settings (parsed once) are the
 * only truth, and the object never holds a client secret at rest.
 */
import type { Env } from "../platform/env";

/** One AES-256-GCM key: `id` (stored beside each ciphertext) and the key as standard base64. */
export interface KeyMaterial {
  id: string;
  key: string;
}

/** The current key seals; every key in the ring opens. */
export interface KeyRing {
  current: KeyMaterial;
  previous: KeyMaterial[];
}

/** What a token endpoint granted (RFC 6749 §5.1), as the object stores it (sealed). */
export interface TokenGrant {
  access_token: string;
  refresh_token: string | null;
  token_type: string | null;
  /** Seconds from `nowMs` of the install or refresh; null when the provider gave none (no expiry). */
  expires_in: number | null;
  /** The granted scopes, when the provider said (space-separated). */
  scope: string | null;
}

/** The client side of a token request: the provider's token endpoint and the client's credentials. */
export interface TokenClient {
  token_endpoint: string;
  client_id: string;
  client_secret: string;
  client_auth: "client_secret_basic" | "client_secret_post";
  /** settings.outbound.allowPrivateHosts: the address guard's policy for the token endpoint. */
  allow_private_hosts: boolean;
  timeout_ms: number;
}

/** What a refresh needs: the token client of the connection's provider. */
export interface RefreshContext extends TokenClient {
  provider_id: string;
}

/**
 * Why no token: `missing` (no such connection here), `needs_refresh` (expired or about to be and
 * refreshable: call `refreshedToken` with the provider's context), `reconnect_required` (the
 * provider refused the refresh token, or it is expired without one), `sealed_with_unknown_key`
 * (no key of the ring opens it), `refresh_failed` (a transient refresh failure; try again later).
 * `message` names no secret and no URL.
 */
export type TokenAnswer =
  | { ok: true; access_token: string; token_type: string | null; provider_id: string }
  | {
      ok: false;
      reason: "missing" | "needs_refresh" | "reconnect_required" | "sealed_with_unknown_key" | "refresh_failed";
      provider_id: string | null;
      message: string;
    };

/** A connection's health as views show it (never a token). */
export interface ConnectionHealth {
  /** `connected`: usable or refreshable; `expired`: expired with no refresh token; `reconnect_required`: the provider refused the refresh token (a reconnect is needed); `missing`: the object holds no tokens. */
  status: "connected" | "expired" | "reconnect_required" | "missing";
  access_token_expires_at: string | null;
  refreshable: boolean;
  last_refreshed_at: string | null;
  /** Why the last refresh failed (status and OAuth error code only), null after a success. */
  last_error: string | null;
  /** The scopes the provider granted, when it said; else null. */
  granted_scope: string | null;
}

/** Outcome of re-sealing one connection under the current key. */
export type ResealOutcome = "resealed" | "current" | "missing" | "unopenable";

/** The verbs of one connection's object. */
export interface ConnectorConnectionRpc {
  /** Stores (or replaces, on reconnect) the connection's tokens, sealed under the ring's current key. */
  install(connectionId: string, providerId: string, grant: TokenGrant, keys: KeyRing, nowMs: number): Promise<ConnectionHealth>;
  /** The access token when it is valid for more than `skewMs`, else why not. */
  accessToken(keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer>;
  /**
   * Refreshes (one refresh at a time: concurrent callers share it, and a caller arriving after a
   * refresh just landed gets its token) and answers the fresh access token.
   */
  refreshedToken(refresh: RefreshContext, keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer>;
  health(nowMs: number): Promise<ConnectionHealth>;
  /** Re-seals the tokens under the ring's current key (key rotation). */
  reseal(keys: KeyRing): Promise<ResealOutcome>;
  /** Deletes everything the object holds. */
  erase(): Promise<void>;
}

/** The object of connection `connectionId`. */
export function connectionStub(env: Env, connectionId: string): ConnectorConnectionRpc {
  return env.CONNECTIONS.get(env.CONNECTIONS.idFromName(connectionId));
}
