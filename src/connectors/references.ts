/**
 * Declaration-time checks of connection references (an HTTP tool's or HTTP agent's headers):
 * without the connector store a reference can never resolve (400); with it, the connection must
 * exist (400 otherwise). Declaring tools and agents is admin-only, and an admin may reference any
 * connection (docs/connectors.md "The tool header"). Messages name the field, never the id.
 */
import { badRequest } from "../http/errors";
import type { Settings } from "../settings/settings";
import { existingConnectionIds } from "./connections";

export interface ConnectionField {
  /** The body field holding the reference, e.g. `headers.authorization`. */
  field: string;
  connection: string;
}

/** 400 when `refs` is not empty and the connector store is not configured. */
export function assertConnectorStoreFor(refs: readonly ConnectionField[], settings: Settings): void {
  if (refs.length && !settings.connectors.storeUrl) {
    throw badRequest(`invalid body: ${refs.map((r) => r.field).join(", ")}: a connection reference needs the connector store (set CONNECTORS_STORE_URL)`);
  }
}

/** 400 naming every field whose connection does not exist. */
export async function assertConnectionsExist(db: D1Database, refs: readonly ConnectionField[]): Promise<void> {
  if (!refs.length) return;
  const found = await existingConnectionIds(db, [...new Set(refs.map((r) => r.connection))]);
  const missing = refs.filter((r) => !found.has(r.connection)).map((r) => r.field);
  if (missing.length) throw badRequest(`invalid body: ${missing.join(", ")}: no such connection`);
}
