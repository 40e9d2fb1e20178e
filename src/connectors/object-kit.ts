/**
 * What the ConnectorConnection object's parts share: its SQLite, the injected fetch and clock, the
 * opening of the sealed tokens, and the verdict on the stored row without a refresh. The parts
 * (src/connectors/connection-refresh.ts, src/connectors/compose.ts) run over one kit.
 */
import type { KeyRing, TokenAnswer, TokenGrant } from "./rpc";
import type { Clock } from "../platform/clock";
import { unseal } from "./sealing";
import { type TokenRow, TokenSecrets, tokensAad } from "./token-store";
import { parseStored } from "../platform/persistence/stored-json";

export const RECONNECT = "reconnect the connection (POST /api/connectors/connections/{connection_id}/reconnect)";

export const UNKNOWN_KEY_MESSAGE = "the connection's tokens are sealed with a key the service no longer has (see CONNECTORS_ENCRYPTION_KEY_PREVIOUS)";

export function expiresAt(grant: TokenGrant, nowMs: number): number | null {
  return grant.expires_in === null ? null : nowMs + grant.expires_in * 1000;
}

export interface ConnectionDeps {
  storage: DurableObjectStorage;
  fetch: typeof fetch;
  clock: Clock;
}

export interface ConnectionKit extends ConnectionDeps {
  sql: SqlStorage;
  /** The row's tokens, unsealed (null: sealed with a key the ring no longer holds). */
  open(row: TokenRow, keys: KeyRing): Promise<TokenSecrets | null>;
  /** The verdict on `row` without a refresh. */
  answer(row: TokenRow | null, keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer>;
}

export function connectionKit(deps: ConnectionDeps): ConnectionKit {
  const open = async (row: TokenRow, keys: KeyRing): Promise<TokenSecrets | null> => {
    const text = await unseal(keys, row.sealed, tokensAad(row.connection_id));
    return text === null ? null : parseStored(TokenSecrets, text, "sealed connection tokens");
  };
  return {
    ...deps,
    sql: deps.storage.sql,
    open,
    async answer(row, keys, skewMs, nowMs) {
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
      const secrets = await open(row, keys);
      if (!secrets) return { ok: false, reason: "sealed_with_unknown_key", provider_id, message: UNKNOWN_KEY_MESSAGE };
      return { ok: true, access_token: secrets.access_token, token_type: secrets.token_type, provider_id };
    },
  };
}
