/**
 * The notifications area's settings: `INTERACTIONS_STORE_URL` switches the internal sink
 * on (the feeds themselves live in NotificationFeed objects); without it a sink write is 501
 * `interactions-not-configured` and the feed read is an honest empty list.
 *
 * A notification has no conversation route, so the two addresses a channel send needs come from
 * settings, per channel (docs/notifications.md):
 * - `NOTIFICATIONS_FROM_<CHANNEL>`: the identity a channel sends from (a route's `our_identity`),
 *   e.g. `NOTIFICATIONS_FROM_TWILIO=+15550001111`, `NOTIFICATIONS_FROM_WHATSAPP=<phone_number_id>`;
 * - `NOTIFICATIONS_RECIPIENT_<CHANNEL>`: where a send without `recipient` goes.
 * `<CHANNEL>` is the channel's registry name in upper case; a blank value counts as unset.
 */
import { d1StoreUrl, envString, intSetting } from "./store-url";

export interface NotificationSettings {
  /** `INTERACTIONS_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
  /** `NOTIFICATIONS_FEED_MAX`: entries each feed keeps, newest first (default 1000). */
  feedMax: number;
  /** `NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS`: a per-identity feed's idle lifetime (default 30 days). */
  identityFeedTtlSeconds: number;
  /** `NOTIFICATIONS_FROM_<CHANNEL>` by lower-case channel name: the identity a channel sends from. */
  senders: Readonly<Record<string, string>>;
  /** `NOTIFICATIONS_RECIPIENT_<CHANNEL>` by lower-case channel name: the default recipient. */
  defaultRecipients: Readonly<Record<string, string>>;
}

const MAX_ADDRESS = 512;

/**
 * The `<PREFIX><CHANNEL>` variables of `env` as a map from lower-case channel name to the trimmed
 * value. Blank values are unset; an over-long or multi-line value is an error naming the variable.
 */
function perChannel(env: Record<string, unknown>, prefix: string, errors: string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  const pattern = new RegExp(`^${prefix}([A-Z0-9_]+)$`);
  for (const name of Object.keys(env)) {
    const m = pattern.exec(name);
    if (!m) continue;
    const value = envString(env, name)?.trim();
    if (!value) continue;
    if (value.length > MAX_ADDRESS || /[\u0000-\u001F\u007F]/.test(value)) {
      errors.push(`${name} must be one line of at most ${MAX_ADDRESS} characters`);
      continue;
    }
    out[m[1].toLowerCase()] = value;
  }
  return out;
}

export function parseNotificationSettings(env: Record<string, unknown>, errors: string[]): NotificationSettings {
  return {
    storeUrl: d1StoreUrl(env, "INTERACTIONS_STORE_URL", errors),
    feedMax: intSetting(env, "NOTIFICATIONS_FEED_MAX", 1000, 1, 100_000, errors),
    identityFeedTtlSeconds: intSetting(env, "NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS", 2_592_000, 60, 31_536_000, errors),
    senders: perChannel(env, "NOTIFICATIONS_FROM_", errors),
    defaultRecipients: perChannel(env, "NOTIFICATIONS_RECIPIENT_", errors),
  };
}
