/**
 * The marketplace's settings (docs/marketplace.md "Settings"): `MARKETPLACE_STORE_URL`
 * switches the install store on (501 `marketplace-not-configured` without it);
 * `MARKETPLACE_REGISTRY_URL` names where plugins come from: `builtin:` (the catalog embedded in
 * this build, so `npm start` works offline) or an https URL of an index document.
 */
import { d1StoreUrl, envString, intSetting } from "./store-url";

/** The registry a deployment reads: the embedded catalog or an https index document. */
export type RegistrySource = { kind: "builtin" } | { kind: "https"; url: string };

/** The value naming the embedded catalog. */
export const BUILTIN_REGISTRY = "builtin:";

export interface MarketplaceSettings {
  /** `MARKETPLACE_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
  /** `MARKETPLACE_REGISTRY_URL`; null when unset (the doors that need a registry answer 501). */
  registry: RegistrySource | null;
  /** `MARKETPLACE_REGISTRY_TIMEOUT_SECONDS`: deadline of one index fetch. */
  registryTimeoutSeconds: number;
  /** `MARKETPLACE_REGISTRY_MAX_BYTES`: largest index document read. */
  registryMaxBytes: number;
  /** `MARKETPLACE_LOCK_LEASE_SECONDS`: how long the fleet lock stays taken if its holder dies. */
  lockLeaseSeconds: number;
}

/**
 * Parses the registry URL: `builtin:`, or an absolute https URL with a host and no user:password.
 * The outbound address guard checks the host at each fetch (it depends on OUTBOUND_ALLOW_PRIVATE_HOSTS).
 */
function registrySource(env: Record<string, unknown>, errors: string[]): RegistrySource | null {
  const raw = envString(env, "MARKETPLACE_REGISTRY_URL")?.trim();
  if (!raw) return null;
  if (raw === BUILTIN_REGISTRY) return { kind: "builtin" };
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (!url || url.protocol !== "https:" || !url.hostname || url.username || url.password) {
    errors.push(`MARKETPLACE_REGISTRY_URL must be ${BUILTIN_REGISTRY} or an https URL with a host and no user:password`);
    return null;
  }
  return { kind: "https", url: url.toString() };
}

export function parseMarketplaceSettings(env: Record<string, unknown>, errors: string[]): MarketplaceSettings {
  return {
    storeUrl: d1StoreUrl(env, "MARKETPLACE_STORE_URL", errors),
    registry: registrySource(env, errors),
    registryTimeoutSeconds: intSetting(env, "MARKETPLACE_REGISTRY_TIMEOUT_SECONDS", 10, 1, 120, errors),
    registryMaxBytes: intSetting(env, "MARKETPLACE_REGISTRY_MAX_BYTES", 4 * 1024 * 1024, 1024, 32 * 1024 * 1024, errors),
    lockLeaseSeconds: intSetting(env, "MARKETPLACE_LOCK_LEASE_SECONDS", 60, 5, 3600, errors),
  };
}
