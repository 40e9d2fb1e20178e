/**
 * The connectors area's settings (issue 14): `CONNECTORS_STORE_URL` switches connections and
 * categories on (501 `connectors-not-configured` without it).
 */
import { d1StoreUrl } from "./store-url";

export interface ConnectorSettings {
  /** `CONNECTORS_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
}

export function parseConnectorSettings(env: Record<string, unknown>, errors: string[]): ConnectorSettings {
  return { storeUrl: d1StoreUrl(env, "CONNECTORS_STORE_URL", errors) };
}
