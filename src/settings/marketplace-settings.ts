/**
 * The marketplace's settings (issue 14): `MARKETPLACE_STORE_URL` switches the install store on
 * (501 `marketplace-not-configured` without it).
 */
import { d1StoreUrl } from "./store-url";

export interface MarketplaceSettings {
  /** `MARKETPLACE_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
}

export function parseMarketplaceSettings(env: Record<string, unknown>, errors: string[]): MarketplaceSettings {
  return { storeUrl: d1StoreUrl(env, "MARKETPLACE_STORE_URL", errors) };
}
