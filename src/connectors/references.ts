/**
 * Declaration-time checks of connection references (an HTTP tool's, API tool's, HTTP agent's or
 * MCP server's headers): without the connector store a reference can never resolve (400); with it,
 * the connection must exist, and the declaration's URL must be at one of its provider's
 * `api_origins` (400 otherwise, src/connectors/token-origins.ts). Declaring is admin-only, and an admin
 * may reference any connection (docs/connectors.md "The tool header"). Messages name the field,
 * never the id or a URL.
 */
import { badRequest } from "../platform/http/errors";
import type { ProviderDescriptor } from "../platform/settings/connector-settings";
import type { Settings } from "../platform/settings/settings";
import { connectionProviders } from "./connections";
import { lendingRefusal } from "./token-origins";

export interface ConnectionField {
  /** The body field holding the reference, e.g. `headers.authorization`. */
  field: string;
  connection: string;
}

/** A reference with the URL its declaration sends the token to. */
export interface LentConnection extends ConnectionField {
  url: string;
}

/** 400 when `refs` is not empty and the connector store is not configured. */
export function assertConnectorStoreFor(refs: readonly ConnectionField[], settings: Settings): void {
  if (refs.length && !settings.connectors.storeUrl) {
    throw badRequest(`invalid body: ${refs.map((r) => r.field).join(", ")}: a connection reference needs the connector store (set CONNECTORS_STORE_URL)`);
  }
}

/** `refs`, each with the URL `url` its declaration sends to. */
export function sentTo(refs: readonly ConnectionField[], url: string): LentConnection[] {
  return refs.map((r) => ({ ...r, url }));
}

/**
 * 400 naming every field whose connection does not exist or may not lend its token to its
 * declaration's URL, grouped by reason (`a, b: no such connection; c: …`).
 */
export async function assertConnectionsLendable(db: D1Database, providers: readonly ProviderDescriptor[], refs: readonly LentConnection[]): Promise<void> {
  if (!refs.length) return;
  const found = await connectionProviders(db, [...new Set(refs.map((r) => r.connection))]);
  const byReason = new Map<string, string[]>();
  for (const r of refs) {
    const providerId = found.get(r.connection);
    const reason = providerId === undefined ? "no such connection" : lendingRefusal(providers, providerId, r.url);
    if (reason === null) continue;
    const fields = byReason.get(reason);
    if (fields) fields.push(r.field);
    else byReason.set(reason, [r.field]);
  }
  if (byReason.size) throw badRequest(`invalid body: ${[...byReason].map(([reason, fields]) => `${fields.join(", ")}: ${reason}`).join("; ")}`);
}
