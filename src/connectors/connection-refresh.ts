/**
 * The ConnectorConnection's refresh: at most one at a time, concurrent callers share the refresh
 * in flight. An await (WebCrypto, the token endpoint) lets other calls in, so every write after
 * one checks the row's generation first: a refresh that raced a reconnect's install stands down.
 */
import type { KeyRing, RefreshContext, TokenAnswer } from "./rpc";
import { type ConnectionKit, RECONNECT, UNKNOWN_KEY_MESSAGE, expiresAt } from "./object-kit";
import { seal } from "./sealing";
import { requestToken } from "./token-endpoint";
import { type TokenSecrets, markRefreshFailure, readTokens, tokensAad, writeTokens } from "./token-store";

export interface ConnectionRefresh {
  /** A usable token after a refresh if one is due (shared with a refresh already in flight). */
  refreshed(refresh: RefreshContext, keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer>;
}

export function connectionRefresh(kit: ConnectionKit): ConnectionRefresh {
  const { sql } = kit;
  /** The refresh in flight, shared by every caller that needs one meanwhile. */
  let refreshing: Promise<TokenAnswer> | null = null;

  async function refreshOnce(refresh: RefreshContext, keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer> {
    const row = readTokens(sql);
    // A refresh that landed just before this call (or a reconnect) may have made one unnecessary.
    const before = await kit.answer(row, keys, skewMs, nowMs);
    if (before.ok || before.reason !== "needs_refresh" || !row) return before;
    if (row.provider_id !== refresh.provider_id)
      return { ok: false, reason: "refresh_failed", provider_id: row.provider_id, message: "the refresh was asked for another provider" };
    const secrets = await kit.open(row, keys);
    if (!secrets) return { ok: false, reason: "sealed_with_unknown_key", provider_id: row.provider_id, message: UNKNOWN_KEY_MESSAGE };
    if (!secrets.refresh_token)
      return { ok: false, reason: "reconnect_required", provider_id: row.provider_id, message: `the connection has no refresh token; ${RECONNECT}` };

    const r = await requestToken(kit.fetch, refresh, { grant_type: "refresh_token", refresh_token: secrets.refresh_token });
    const now = readTokens(sql);
    if (!now || now.generation !== row.generation) return kit.answer(now, keys, skewMs, nowMs);
    if (!r.ok) {
      markRefreshFailure(sql, `refresh failed: ${r.message}`, r.permanent, nowMs);
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
    const latest = readTokens(sql);
    if (!latest || latest.generation !== row.generation) return kit.answer(latest, keys, skewMs, nowMs);
    writeTokens(
      sql,
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

  return {
    refreshed(refresh, keys, skewMs, nowMs) {
      if (!refreshing) {
        refreshing = refreshOnce(refresh, keys, skewMs, nowMs).finally(() => {
          refreshing = null;
        });
      }
      return refreshing;
    },
  };
}
