/**
 * The notifications sink's settings (issue 14): `INTERACTIONS_STORE_URL` switches the internal sink
 * on (the feeds themselves live in NotificationFeed objects); without it a sink write is 501
 * `interactions-not-configured` and the feed read is an honest empty list.
 */
import { d1StoreUrl, intSetting } from "./store-url";

export interface NotificationSettings {
  /** `INTERACTIONS_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
  /** `NOTIFICATIONS_FEED_MAX`: entries each feed keeps, newest first (default 1000). */
  feedMax: number;
  /** `NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS`: a per-identity feed's idle lifetime (default 30 days). */
  identityFeedTtlSeconds: number;
}

export function parseNotificationSettings(env: Record<string, unknown>, errors: string[]): NotificationSettings {
  return {
    storeUrl: d1StoreUrl(env, "INTERACTIONS_STORE_URL", errors),
    feedMax: intSetting(env, "NOTIFICATIONS_FEED_MAX", 1000, 1, 100_000, errors),
    identityFeedTtlSeconds: intSetting(env, "NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS", 2_592_000, 60, 31_536_000, errors),
  };
}
