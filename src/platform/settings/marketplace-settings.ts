/**
 * The marketplace's settings (docs/marketplace.md "Settings"). The registry is `builtin:` (the
 * catalog embedded in this build, so `npm start` works offline) or an https URL of an index
 * document; the outbound address guard checks its host at each fetch (it depends on
 * OUTBOUND_ALLOW_PRIVATE_HOSTS).
 */
import { type EnvVars, defineSetting, envString, storeUrl, wholeNumber } from "./define";

/** The registry a deployment reads: the embedded catalog or an https index document. */
export type RegistrySource = { kind: "builtin" } | { kind: "https"; url: string };

/** The value naming the embedded catalog. */
export const BUILTIN_REGISTRY = "builtin:";

export const MARKETPLACE_STORE_URL = storeUrl("MARKETPLACE_STORE_URL", {
  area: "marketplace",
  what: "The marketplace's install store",
  unset: "every marketplace door answers 501 marketplace-not-configured",
  gate: { code: "marketplace", what: "marketplace store" },
});

/** `builtin:`, or an absolute https URL with a host and no user:password; null when unset (the doors that need a registry answer 501). */
export const MARKETPLACE_REGISTRY_URL = defineSetting({
  name: "MARKETPLACE_REGISTRY_URL",
  area: "marketplace",
  type: "string",
  default: null,
  secret: false,
  overlay: true,
  description: "Where plugins come from: builtin: (the embedded catalog) or the https URL of a registry index; unset → the registry doors answer 501.",
  read(env, errors): RegistrySource | null {
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
  },
});

export const MARKETPLACE_REGISTRY_TIMEOUT_SECONDS = wholeNumber("MARKETPLACE_REGISTRY_TIMEOUT_SECONDS", {
  area: "marketplace",
  default: 10,
  min: 1,
  max: 120,
  description: "Deadline of one registry index fetch.",
});

export const MARKETPLACE_REGISTRY_MAX_BYTES = wholeNumber("MARKETPLACE_REGISTRY_MAX_BYTES", {
  area: "marketplace",
  default: 4 * 1024 * 1024,
  min: 1024,
  max: 32 * 1024 * 1024,
  description: "Largest registry index document read.",
});

export const MARKETPLACE_LOCK_LEASE_SECONDS = wholeNumber("MARKETPLACE_LOCK_LEASE_SECONDS", {
  area: "marketplace",
  default: 60,
  min: 5,
  max: 3600,
  description: "How long the fleet marketplace lock stays taken if its holder dies.",
});

export const MARKETPLACE_SETTINGS = [
  MARKETPLACE_STORE_URL,
  MARKETPLACE_REGISTRY_URL,
  MARKETPLACE_REGISTRY_TIMEOUT_SECONDS,
  MARKETPLACE_REGISTRY_MAX_BYTES,
  MARKETPLACE_LOCK_LEASE_SECONDS,
] as const;

export interface MarketplaceSettings {
  storeUrl: string | null;
  registry: RegistrySource | null;
  registryTimeoutSeconds: number;
  registryMaxBytes: number;
  lockLeaseSeconds: number;
}

export function parseMarketplaceSettings(env: EnvVars, errors: string[]): MarketplaceSettings {
  return {
    storeUrl: MARKETPLACE_STORE_URL.read(env, errors),
    registry: MARKETPLACE_REGISTRY_URL.read(env, errors),
    registryTimeoutSeconds: MARKETPLACE_REGISTRY_TIMEOUT_SECONDS.read(env, errors),
    registryMaxBytes: MARKETPLACE_REGISTRY_MAX_BYTES.read(env, errors),
    lockLeaseSeconds: MARKETPLACE_LOCK_LEASE_SECONDS.read(env, errors),
  };
}
