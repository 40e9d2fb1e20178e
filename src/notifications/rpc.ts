/**
 * The NotificationFeed objects' RPC contract (spec §2.8, §4.9; platform-facts A1
 * "Internal sink"). One object per feed: `shared` holds every notification recorded to the sink,
 * `identity:<user_id>` the ones addressed to that identity (`audience`). Each is a small SQLite
 * ring, newest first, trimmed to its cap on every insert; an identity feed also has an idle TTL,
 * refreshed by each push, after which its alarm deletes the object's storage.
 *
 * Notifications travel as JSON text: the Worker serializes a record once for both feeds it goes
 * to, and a read answers one JSON array text that the door embeds in its answer as is, so a read
 * of a full feed costs no parse and no re-serialization of a thousand records.
 */
import type { Env } from "../platform/env";
import type { KeyVerdict } from "../platform/http/idempotency";

/** The shared feed's object name. */
export const SHARED_FEED = "shared";

/** The object name of `userId`'s own feed. */
export function identityFeed(userId: string): string {
  return `identity:${userId}`;
}

export interface FeedPush {
  /** Entries the feed keeps (`NOTIFICATIONS_FEED_MAX`); older ones are dropped on this insert. */
  cap: number;
  /** Idle lifetime of the feed, refreshed by this push; null: the feed never expires (the shared feed). */
  idleTtlMs: number | null;
}

export interface NotificationFeedRpc {
  /** Inserts one notification (its JSON text) as the newest entry and trims the feed to `cap`. */
  push(notification: string, opts: FeedPush): Promise<void>;
  /**
   * The newest `limit` entries, newest first, as one JSON array text (`[]` for an empty or expired
   * feed). With `since` (ISO-8601), only notifications created at or after it: an identity feed's
   * reader sees only its own lineage's (src/access-control/identity.ts).
   */
  list(limit: number, since?: string): Promise<string>;
  /**
   * The send door's `Idempotency-Key`s, on an object named `sendKeysObject(scope)` that holds no
   * feed (src/notifications/send-keys.ts): claims `key` for a request with `fingerprint` until
   * `expiresAtMs`, or answers its first request's answer or why not.
   */
  claimSendKey(key: string, fingerprint: string, expiresAtMs: number): Promise<KeyVerdict<string>>;
  /** The claimed send was answered `answer`, or failed (null: the key is released for a retry). */
  settleSendKey(key: string, fingerprint: string, answer: string | null): Promise<void>;
  /**
   * Deletes every entry sent to one of `recipients` (a person's erasure: the addresses it was
   * seen at); answers the audiences of the entries removed.
   */
  eraseRecipients(recipients: string[]): Promise<string[]>;
}

/** The object of feed `name` (`SHARED_FEED` or `identityFeed(user_id)`). */
export function notificationFeedStub(env: Env, name: string): NotificationFeedRpc {
  return env.NOTIFICATION_FEEDS.get(env.NOTIFICATION_FEEDS.idFromName(name));
}
