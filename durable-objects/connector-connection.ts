/**
 * ConnectorConnection: one per connection (docs/connectors.md). A thin shell over
 * src/connectors/token-store.ts (SQLite), sealing.ts (AES-256-GCM) and token-endpoint.ts (the
 * refresh request). It holds the connection's tokens sealed, answers a usable access token in one
 * call, and runs at most one refresh at a time: concurrent callers share the refresh in flight.
 * The contract is src/connectors/rpc.ts.
 *
 * An await (WebCrypto, the token endpoint) lets other calls in, so every write after one checks
 * the row's generation first: a refresh or re-seal that raced a reconnect's install stands down.
 */
import { DurableObject } from "cloudflare:workers";
import type { ConnectionHealth, ConnectorConnectionRpc, KeyRing, RefreshContext, ResealOutcome, TokenAnswer, TokenGrant } from "../src/connectors/rpc";
import { seal, unseal } from "../src/connectors/sealing";
import { requestToken } from "../src/connectors/token-endpoint";
import {
  type TokenRow,
  type TokenSecrets,
  createTokenTables,
  healthOf,
  markRefreshFailure,
  readTokens,
  tokensAad,
  writeTokens,
} from "../src/connectors/token-store";
import type { Env } from "../src/platform/env";
import { edgeFetch } from "../src/platform/net/edge-fetch";

const RECONNECT = "reconnect the connection (POST /api/connectors/connections/{connection_id}/reconnect)";

function expiresAt(grant: TokenGrant, nowMs: number): number | null {
  return grant.expires_in === null ? null : nowMs + grant.expires_in * 1000;
}

export class ConnectorConnection extends DurableObject<Env> implements ConnectorConnectionRpc {
  /** The refresh in flight, shared by every caller that needs one meanwhile. */
  private refreshing: Promise<TokenAnswer> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createTokenTables(ctx.storage.sql);
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  async install(connectionId: string, providerId: string, grant: TokenGrant, keys: KeyRing, nowMs: number): Promise<ConnectionHealth> {
    const secrets: TokenSecrets = { access_token: grant.access_token, refresh_token: grant.refresh_token, token_type: grant.token_type };
    const sealed = await seal(keys, JSON.stringify(secrets), tokensAad(connectionId));
    writeTokens(
      this.sql,
      {
        connection_id: connectionId,
        provider_id: providerId,
        sealed,
        expires_at: expiresAt(grant, nowMs),
        refreshable: grant.refresh_token !== null,
        granted_scope: grant.scope,
        status: "ok",
        last_error: null,
        last_refreshed_at: null,
      },
      nowMs,
    );
    return healthOf(readTokens(this.sql), nowMs);
  }

  private async open(row: TokenRow, keys: KeyRing): Promise<TokenSecrets | null> {
    const text = await unseal(keys, row.sealed, tokensAad(row.connection_id));
    return text === null ? null : (JSON.parse(text) as TokenSecrets);
  }

  /** The verdict on `row` without a refresh. */
  private async answer(row: TokenRow | null, keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer> {
    if (!row) return { ok: false, reason: "missing", provider_id: null, message: "connection not found" };
    const provider_id = row.provider_id;
    if (row.status === "reconnect_required")
      return { ok: false, reason: "reconnect_required", provider_id, message: `the provider refused to refresh the connection's token; ${RECONNECT}` };
    if (row.expires_at !== null && row.expires_at - skewMs <= nowMs) {
      if (row.refreshable) return { ok: false, reason: "needs_refresh", provider_id, message: "the connection's access token needs a refresh" };
      if (row.expires_at <= nowMs)
        return {
          ok: false,
          reason: "reconnect_required",
          provider_id,
          message: `the connection's access token expired and it has no refresh token; ${RECONNECT}`,
        };
    }
    const secrets = await this.open(row, keys);
    if (!secrets)
      return {
        ok: false,
        reason: "sealed_with_unknown_key",
        provider_id,
        message: "the connection's tokens are sealed with a key the service no longer has (see CONNECTORS_ENCRYPTION_KEY_PREVIOUS)",
      };
    return { ok: true, access_token: secrets.access_token, token_type: secrets.token_type, provider_id };
  }

  async accessToken(keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer> {
    return this.answer(readTokens(this.sql), keys, skewMs, nowMs);
  }

  async refreshedToken(refresh: RefreshContext, keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer> {
    if (!this.refreshing) {
      this.refreshing = this.refreshOnce(refresh, keys, skewMs, nowMs).finally(() => {
        this.refreshing = null;
      });
    }
    return this.refreshing;
  }

  private async refreshOnce(refresh: RefreshContext, keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer> {
    const row = readTokens(this.sql);
    // A refresh that landed just before this call (or a reconnect) may have made one unnecessary.
    const before = await this.answer(row, keys, skewMs, nowMs);
    if (before.ok || before.reason !== "needs_refresh" || !row) return before;
    if (row.provider_id !== refresh.provider_id)
      return { ok: false, reason: "refresh_failed", provider_id: row.provider_id, message: "the refresh was asked for another provider" };
    const secrets = await this.open(row, keys);
    if (!secrets)
      return {
        ok: false,
        reason: "sealed_with_unknown_key",
        provider_id: row.provider_id,
        message: "the connection's tokens are sealed with a key the service no longer has (see CONNECTORS_ENCRYPTION_KEY_PREVIOUS)",
      };
    if (!secrets.refresh_token)
      return { ok: false, reason: "reconnect_required", provider_id: row.provider_id, message: `the connection has no refresh token; ${RECONNECT}` };

    const r = await requestToken(edgeFetch, refresh, { grant_type: "refresh_token", refresh_token: secrets.refresh_token });
    const now = readTokens(this.sql);
    if (!now || now.generation !== row.generation) return this.answer(now, keys, skewMs, nowMs);
    if (!r.ok) {
      markRefreshFailure(this.sql, `refresh failed: ${r.message}`, r.permanent, nowMs);
      return r.permanent
        ? {
            ok: false,
            reason: "reconnect_required",
            provider_id: row.provider_id,
            message: `the provider refused to refresh the connection's token (${r.message}); ${RECONNECT}`,
          }
        : { ok: false, reason: "refresh_failed", provider_id: row.provider_id, message: `the connection's token could not be refreshed: ${r.message}` };
    }
    const next: TokenSecrets = {
      access_token: r.grant.access_token,
      // RFC 6749 §6: a provider that rotates refresh tokens sends a new one; otherwise the old one stays valid.
      refresh_token: r.grant.refresh_token ?? secrets.refresh_token,
      token_type: r.grant.token_type ?? secrets.token_type,
    };
    const sealed = await seal(keys, JSON.stringify(next), tokensAad(row.connection_id));
    const latest = readTokens(this.sql);
    if (!latest || latest.generation !== row.generation) return this.answer(latest, keys, skewMs, nowMs);
    writeTokens(
      this.sql,
      {
        ...latest,
        sealed,
        expires_at: expiresAt(r.grant, nowMs),
        refreshable: true,
        granted_scope: r.grant.scope ?? latest.granted_scope,
        status: "ok",
        last_error: null,
        last_refreshed_at: nowMs,
      },
      nowMs,
    );
    return { ok: true, access_token: next.access_token, token_type: next.token_type, provider_id: row.provider_id };
  }

  async health(nowMs: number): Promise<ConnectionHealth> {
    return healthOf(readTokens(this.sql), nowMs);
  }

  async reseal(keys: KeyRing): Promise<ResealOutcome> {
    const row = readTokens(this.sql);
    if (!row) return "missing";
    if (row.sealed.kid === keys.current.id) return "current";
    const text = await unseal(keys, row.sealed, tokensAad(row.connection_id));
    if (text === null) return "unopenable";
    const sealed = await seal(keys, text, tokensAad(row.connection_id));
    const latest = readTokens(this.sql);
    if (!latest) return "missing";
    // An install or refresh meanwhile sealed under the ring it was given; judge that row again.
    if (latest.generation !== row.generation) return this.reseal(keys);
    writeTokens(this.sql, { ...latest, sealed }, Date.now());
    return "resealed";
  }

  async erase(): Promise<void> {
    await this.ctx.storage.deleteAll();
    // The instance may live on (a later install under the same id): its table must exist again.
    createTokenTables(this.sql);
  }
}
