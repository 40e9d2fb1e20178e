/**
 * Composes the ConnectorConnection object's parts over one kit (src/connectors/object-kit.ts):
 * the token verbs (install, the usable token, health, re-seal under a new key ring, erase) over
 * src/connectors/token-store.ts and sealing.ts, and the single-flight refresh
 * (src/connectors/connection-refresh.ts).
 */
import type { ConnectionHealth, KeyRing, ResealOutcome, TokenAnswer, TokenGrant } from "./rpc";
import { type ConnectionDeps, connectionKit, expiresAt } from "./object-kit";
import { type ConnectionRefresh, connectionRefresh } from "./connection-refresh";
import { seal, unseal } from "./sealing";
import { type TokenSecrets, createTokenTables, healthOf, readTokens, tokensAad, writeTokens } from "./token-store";

export interface ConnectionTokens {
  install(connectionId: string, providerId: string, grant: TokenGrant, keys: KeyRing, nowMs: number): Promise<ConnectionHealth>;
  accessToken(keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer>;
  health(nowMs: number): ConnectionHealth;
  reseal(keys: KeyRing): Promise<ResealOutcome>;
  erase(): Promise<void>;
}

export interface ConnectionParts {
  tokens: ConnectionTokens;
  refresh: ConnectionRefresh;
}

export function composeConnection(deps: ConnectionDeps): ConnectionParts {
  const kit = connectionKit(deps);
  const { sql } = kit;

  async function reseal(keys: KeyRing): Promise<ResealOutcome> {
    const row = readTokens(sql);
    if (!row) return "missing";
    if (row.sealed.kid === keys.current.id) return "current";
    const text = await unseal(keys, row.sealed, tokensAad(row.connection_id));
    if (text === null) return "unopenable";
    const sealed = await seal(keys, text, tokensAad(row.connection_id));
    const latest = readTokens(sql);
    if (!latest) return "missing";
    // An install or refresh meanwhile sealed under the ring it was given; judge that row again.
    if (latest.generation !== row.generation) return reseal(keys);
    writeTokens(sql, { ...latest, sealed }, kit.clock.now());
    return "resealed";
  }

  const tokens: ConnectionTokens = {
    async install(connectionId, providerId, grant, keys, nowMs) {
      const secrets: TokenSecrets = { access_token: grant.access_token, refresh_token: grant.refresh_token, token_type: grant.token_type };
      const sealed = await seal(keys, JSON.stringify(secrets), tokensAad(connectionId));
      writeTokens(
        sql,
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
      return healthOf(readTokens(sql), nowMs);
    },
    accessToken: (keys, skewMs, nowMs) => kit.answer(readTokens(sql), keys, skewMs, nowMs),
    health: (nowMs) => healthOf(readTokens(sql), nowMs),
    reseal,
    async erase() {
      await kit.storage.deleteAll();
      // The instance may live on (a later install under the same id): its table must exist again.
      createTokenTables(sql);
    },
  };

  return { tokens, refresh: connectionRefresh(kit) };
}
