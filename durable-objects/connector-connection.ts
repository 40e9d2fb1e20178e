/**
 * ConnectorConnection: one per connection (docs/connectors.md). A shell over its parts
 * (src/connectors/compose.ts): the token verbs over src/connectors/token-store.ts
 * (SQLite) and sealing.ts (AES-256-GCM), and the refresh (src/connectors/connection-refresh.ts,
 * the request in token-endpoint.ts). It holds the connection's tokens sealed, answers a usable
 * access token in one call, and runs at most one refresh at a time: concurrent callers share the
 * refresh in flight. The contract is src/connectors/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { ConnectionHealth, ConnectorConnectionRpc, KeyRing, RefreshContext, ResealOutcome, TokenAnswer, TokenGrant } from "../src/connectors/rpc";
import { type ConnectionParts, composeConnection } from "../src/connectors/compose";
import { createTokenTables } from "../src/connectors/token-store";
import type { Env } from "../src/platform/env";
import { startObject } from "../src/platform/persistence/object-start";
import { edgeFetch } from "../src/platform/net/edge-fetch";
import { systemClock } from "../src/platform/clock";

export class ConnectorConnection extends DurableObject<Env> implements ConnectorConnectionRpc {
  private readonly parts: ConnectionParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: (storage) => createTokenTables(storage.sql) });
    this.parts = composeConnection({ storage: ctx.storage, fetch: edgeFetch, clock: systemClock });
  }

  async install(connectionId: string, providerId: string, grant: TokenGrant, keys: KeyRing, nowMs: number): Promise<ConnectionHealth> {
    return this.parts.tokens.install(connectionId, providerId, grant, keys, nowMs);
  }

  async accessToken(keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer> {
    return this.parts.tokens.accessToken(keys, skewMs, nowMs);
  }

  async refreshedToken(refresh: RefreshContext, keys: KeyRing, skewMs: number, nowMs: number): Promise<TokenAnswer> {
    return this.parts.refresh.refreshed(refresh, keys, skewMs, nowMs);
  }

  async health(nowMs: number): Promise<ConnectionHealth> {
    return this.parts.tokens.health(nowMs);
  }

  async reseal(keys: KeyRing): Promise<ResealOutcome> {
    return this.parts.tokens.reseal(keys);
  }

  async erase(): Promise<void> {
    return this.parts.tokens.erase();
  }
}
