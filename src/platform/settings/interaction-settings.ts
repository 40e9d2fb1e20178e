/**
 * The interactions area's settings (docs/interactions.md "Settings"). The store switch
 * is `INTERACTIONS_STORE_URL`, shared with the notifications sink (src/platform/settings/notification-settings.ts):
 * without it the interactions doors answer 501 `interactions-not-configured` and `ask_user` refuses.
 * - `INTERACTIONS_TTL_SECONDS`: how long an interaction waits for its answer before it expires
 *   (the parked run then resumes with a timeout);
 * - `INTERACTIONS_TICKET_TTL_SECONDS`: the lifetime of a public callback ticket (never beyond the
 *   interaction's own expiry);
 * - `INTERACTIONS_RETENTION_SECONDS`: how long an ended interaction stays readable;
 * - `INTERACTIONS_EVENTS_MAX`: events the stream's ring keeps for `Last-Event-ID` replays;
 * - `INTERACTIONS_STREAM_MAX_SECONDS`: the longest one stream stays open (clients reconnect);
 * - `INTERACTIONS_MEDIA_MAX_BYTES`: the largest media item an answer may store.
 */
import { intSetting } from "./store-url";

export interface InteractionSettings {
  /** `INTERACTIONS_TTL_SECONDS` (default 1 day). */
  ttlSeconds: number;
  /** `INTERACTIONS_TICKET_TTL_SECONDS` (default 1 day). */
  ticketTtlSeconds: number;
  /** `INTERACTIONS_RETENTION_SECONDS` (default 7 days). */
  retentionSeconds: number;
  /** `INTERACTIONS_EVENTS_MAX` (default 1000). */
  eventsMax: number;
  /** `INTERACTIONS_STREAM_MAX_SECONDS` (default 300). */
  streamMaxSeconds: number;
  /** `INTERACTIONS_MEDIA_MAX_BYTES` (default 10 MiB). */
  mediaMaxBytes: number;
}

export const INTERACTIONS_DEFAULTS = {
  ttlSeconds: 86_400,
  ticketTtlSeconds: 86_400,
  retentionSeconds: 604_800,
  eventsMax: 1000,
  streamMaxSeconds: 300,
  mediaMaxBytes: 10 * 1024 * 1024,
} as const;

/** The bounds each setting is checked against (also the registry's). */
export const INTERACTIONS_BOUNDS = {
  ttlSeconds: [60, 31_536_000],
  ticketTtlSeconds: [60, 31_536_000],
  retentionSeconds: [60, 31_536_000],
  eventsMax: [10, 100_000],
  streamMaxSeconds: [1, 3600],
  mediaMaxBytes: [1024, 100 * 1024 * 1024],
} as const;

export function parseInteractionSettings(env: Record<string, unknown>, errors: string[]): InteractionSettings {
  const d = INTERACTIONS_DEFAULTS;
  const b = INTERACTIONS_BOUNDS;
  return {
    ttlSeconds: intSetting(env, "INTERACTIONS_TTL_SECONDS", d.ttlSeconds, b.ttlSeconds[0], b.ttlSeconds[1], errors),
    ticketTtlSeconds: intSetting(env, "INTERACTIONS_TICKET_TTL_SECONDS", d.ticketTtlSeconds, b.ticketTtlSeconds[0], b.ticketTtlSeconds[1], errors),
    retentionSeconds: intSetting(env, "INTERACTIONS_RETENTION_SECONDS", d.retentionSeconds, b.retentionSeconds[0], b.retentionSeconds[1], errors),
    eventsMax: intSetting(env, "INTERACTIONS_EVENTS_MAX", d.eventsMax, b.eventsMax[0], b.eventsMax[1], errors),
    streamMaxSeconds: intSetting(env, "INTERACTIONS_STREAM_MAX_SECONDS", d.streamMaxSeconds, b.streamMaxSeconds[0], b.streamMaxSeconds[1], errors),
    mediaMaxBytes: intSetting(env, "INTERACTIONS_MEDIA_MAX_BYTES", d.mediaMaxBytes, b.mediaMaxBytes[0], b.mediaMaxBytes[1], errors),
  };
}
