/**
 * The interactions area's settings (docs/interactions.md "Settings"). The store switch is
 * `INTERACTIONS_STORE_URL`, shared with the notifications sink (notification-settings.ts): without
 * it the interactions doors answer 501 `interactions-not-configured` and `ask_user` refuses.
 */
import { type EnvVars, wholeNumber } from "./define";

export const INTERACTIONS_TTL_SECONDS = wholeNumber("INTERACTIONS_TTL_SECONDS", {
  area: "interactions",
  default: 86_400,
  min: 60,
  max: 31_536_000,
  description: "How long an ask_user interaction waits for its answer; then it expires and the parked run resumes with a timeout.",
});

export const INTERACTIONS_TICKET_TTL_SECONDS = wholeNumber("INTERACTIONS_TICKET_TTL_SECONDS", {
  area: "interactions",
  default: 86_400,
  min: 60,
  max: 31_536_000,
  description: "Lifetime of a public callback ticket (/api/interactions/callback/{ticket}); never beyond its interaction's expiry.",
});

export const INTERACTIONS_RETENTION_SECONDS = wholeNumber("INTERACTIONS_RETENTION_SECONDS", {
  area: "interactions",
  default: 604_800,
  min: 60,
  max: 31_536_000,
  description: "How long an ended interaction (answered, cancelled, expired) stays readable before it, its listing row and its media are deleted.",
});

export const INTERACTIONS_EVENTS_MAX = wholeNumber("INTERACTIONS_EVENTS_MAX", {
  area: "interactions",
  default: 1000,
  min: 10,
  max: 100_000,
  description: "Events the interaction stream keeps for Last-Event-ID replays (oldest dropped first).",
});

export const INTERACTIONS_STREAM_MAX_SECONDS = wholeNumber("INTERACTIONS_STREAM_MAX_SECONDS", {
  area: "interactions",
  default: 300,
  min: 1,
  max: 3600,
  description: "The longest one GET /api/interactions/stream stays open; the client reconnects with Last-Event-ID.",
});

export const INTERACTIONS_MEDIA_MAX_BYTES = wholeNumber("INTERACTIONS_MEDIA_MAX_BYTES", {
  area: "interactions",
  default: 10 * 1024 * 1024,
  min: 1024,
  max: 100 * 1024 * 1024,
  description: "Largest media item an answer stores (GET /api/interactions/media/{media_id}); a larger one is kept as a reference only.",
});

export const INTERACTION_SETTINGS = [
  INTERACTIONS_TTL_SECONDS,
  INTERACTIONS_TICKET_TTL_SECONDS,
  INTERACTIONS_RETENTION_SECONDS,
  INTERACTIONS_EVENTS_MAX,
  INTERACTIONS_STREAM_MAX_SECONDS,
  INTERACTIONS_MEDIA_MAX_BYTES,
] as const;

export interface InteractionSettings {
  ttlSeconds: number;
  ticketTtlSeconds: number;
  retentionSeconds: number;
  eventsMax: number;
  streamMaxSeconds: number;
  mediaMaxBytes: number;
}

export function parseInteractionSettings(env: EnvVars, errors: string[]): InteractionSettings {
  return {
    ttlSeconds: INTERACTIONS_TTL_SECONDS.read(env, errors),
    ticketTtlSeconds: INTERACTIONS_TICKET_TTL_SECONDS.read(env, errors),
    retentionSeconds: INTERACTIONS_RETENTION_SECONDS.read(env, errors),
    eventsMax: INTERACTIONS_EVENTS_MAX.read(env, errors),
    streamMaxSeconds: INTERACTIONS_STREAM_MAX_SECONDS.read(env, errors),
    mediaMaxBytes: INTERACTIONS_MEDIA_MAX_BYTES.read(env, errors),
  };
}
