/**
 * The notifications area's settings: `INTERACTIONS_STORE_URL` switches the internal sink on (the
 * feeds themselves live in NotificationFeed objects); without it a sink write is 501
 * `interactions-not-configured` and the feed read is an honest empty list.
 *
 * A notification has no conversation route, so the two addresses a channel send needs come from
 * settings, per channel (docs/notifications.md), e.g. `NOTIFICATIONS_FROM_TWILIO=+15550001111`,
 * `NOTIFICATIONS_FROM_WHATSAPP=<phone_number_id>`. `<CHANNEL>` is the channel's registry name in
 * upper case; a blank value counts as unset.
 */
import { type EnvVars, type Setting, defineSetting, envString, storeUrl, wholeNumber } from "./define";

export const INTERACTIONS_STORE_URL = storeUrl("INTERACTIONS_STORE_URL", {
  area: "notifications",
  what: "The notifications sink's and the interactions' store",
  unset: "a sink write and every interactions door answer 501 interactions-not-configured, the feed reads empty and ask_user refuses",
  gate: { code: "interactions", what: "interactions store" },
});

export const NOTIFICATIONS_FEED_MAX = wholeNumber("NOTIFICATIONS_FEED_MAX", {
  area: "notifications",
  default: 1000,
  min: 1,
  max: 100_000,
  description: "Entries each notification feed keeps, newest first.",
});

export const NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS = wholeNumber("NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS", {
  area: "notifications",
  default: 2_592_000,
  min: 60,
  max: 31_536_000,
  description: "A per-identity feed's idle lifetime.",
});

const MAX_ADDRESS = 512;

/**
 * A family of `<PREFIX><CHANNEL>` variables, read as a map from lower-case channel name to the
 * trimmed value. Blank values are unset; an over-long or multi-line value is an error naming the
 * variable.
 */
function perChannel(prefix: string, description: string): Setting<Record<string, string>> {
  const pattern = new RegExp(`^${prefix}([A-Z0-9_]+)$`);
  return defineSetting({
    name: `${prefix}<CHANNEL>`,
    family: pattern,
    area: "notifications",
    type: "string",
    default: null,
    secret: false,
    overlay: true,
    description,
    read(env, errors): Record<string, string> {
      const out: Record<string, string> = Object.create(null);
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
    },
  });
}

export const NOTIFICATIONS_FROM = perChannel(
  "NOTIFICATIONS_FROM_",
  `The identity a channel sends notifications from (a route's our_identity), per channel (upper-case registry name); one line of at most ${MAX_ADDRESS} characters.`,
);

export const NOTIFICATIONS_RECIPIENT = perChannel(
  "NOTIFICATIONS_RECIPIENT_",
  `Where a channel notification without a recipient goes, per channel; one line of at most ${MAX_ADDRESS} characters.`,
);

export const NOTIFICATION_SETTINGS = [
  INTERACTIONS_STORE_URL,
  NOTIFICATIONS_FEED_MAX,
  NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS,
  NOTIFICATIONS_FROM,
  NOTIFICATIONS_RECIPIENT,
] as const;

export interface NotificationSettings {
  /** `INTERACTIONS_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
  feedMax: number;
  identityFeedTtlSeconds: number;
  /** `NOTIFICATIONS_FROM_<CHANNEL>` by lower-case channel name. */
  senders: Readonly<Record<string, string>>;
  /** `NOTIFICATIONS_RECIPIENT_<CHANNEL>` by lower-case channel name. */
  defaultRecipients: Readonly<Record<string, string>>;
}

export function parseNotificationSettings(env: EnvVars, errors: string[]): NotificationSettings {
  return {
    storeUrl: INTERACTIONS_STORE_URL.read(env, errors),
    feedMax: NOTIFICATIONS_FEED_MAX.read(env, errors),
    identityFeedTtlSeconds: NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS.read(env, errors),
    senders: NOTIFICATIONS_FROM.read(env, errors),
    defaultRecipients: NOTIFICATIONS_RECIPIENT.read(env, errors),
  };
}
