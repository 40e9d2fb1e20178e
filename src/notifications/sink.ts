/**
 * The internal notifications sink (platform-facts A1 "Internal sink"): every recorded notification
 * goes to the shared feed, and one with an `audience` also to that identity's own feed. Each feed
 * is its own NotificationFeed object (src/notifications/rpc.ts), so a busy identity never
 * waits behind another, and the shared feed's writes are one small SQLite insert each.
 */
import { type FeedPush, SHARED_FEED, identityFeed, notificationFeedStub } from "./rpc";
import type { Env } from "../platform/env";
import type { NotificationSettings } from "../platform/settings/notification-settings";
import type { Notification } from "./schemas";

/**
 * Records `n` to the shared feed and, when it has an audience, to that identity's feed. The two
 * objects are written side by side: they are separate objects, so the pair is not one
 * transaction; a failure of either rejects (the door then answers 500 and logs it).
 */
export async function recordNotification(env: Env, s: NotificationSettings, n: Notification): Promise<void> {
  const text = JSON.stringify(n);
  const shared: FeedPush = { cap: s.feedMax, idleTtlMs: null };
  const writes = [notificationFeedStub(env, SHARED_FEED).push(text, shared)];
  if (n.audience !== undefined) {
    writes.push(notificationFeedStub(env, identityFeed(n.audience)).push(text, { cap: s.feedMax, idleTtlMs: s.identityFeedTtlSeconds * 1000 }));
  }
  await Promise.all(writes);
}

/**
 * The feed a reader sees, newest first, as one JSON array text. An identity feed is read from
 * `since` on, the start of the reader's key lineage (src/access-control/identity.ts): what was addressed to
 * the user_id before was another holder's, or nobody's.
 */
export function readFeed(env: Env, s: NotificationSettings, feed: { kind: "shared" } | { kind: "identity"; user_id: string }, since: string): Promise<string> {
  if (feed.kind === "shared") return notificationFeedStub(env, SHARED_FEED).list(s.feedMax);
  return notificationFeedStub(env, identityFeed(feed.user_id)).list(s.feedMax, since);
}

/**
 * Removes from the feeds every notification sent to one of `recipients` (a person's erasure): the
 * shared feed holds every recorded one, and names the identity feeds that got a copy.
 */
export async function eraseNotificationsTo(env: Env, recipients: string[]): Promise<void> {
  if (!recipients.length) return;
  const audiences = await notificationFeedStub(env, SHARED_FEED).eraseRecipients(recipients);
  await Promise.all(audiences.map((a) => notificationFeedStub(env, identityFeed(a)).eraseRecipients(recipients)));
}
