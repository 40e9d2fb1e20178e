/**
 * The web channel's settings (docs/channels.md "Web"): how long a visitor's session lives, whether
 * its cookie is `Secure`, how many sessions one client network may mint and how many attachments
 * it may upload, how many live streams one
 * visitor may hold open, the largest body a web door reads, the entry gate's guess throttle and the
 * page's title.
 */
import { type EnvVars, type Setting, defineSetting, envString, text, wholeNumber } from "./define";

export const CHANNEL_WEB_SESSION_TTL_SECONDS = wholeNumber("CHANNEL_WEB_SESSION_TTL_SECONDS", {
  area: "channels",
  default: 2_592_000,
  min: 300,
  max: 31_536_000,
  description: "How long a web visitor's session lives after its last use; every use refreshes it.",
});

export const CHANNEL_WEB_PENDING_TTL_SECONDS = wholeNumber("CHANNEL_WEB_PENDING_TTL_SECONDS", {
  area: "channels",
  default: 600,
  min: 30,
  max: 86_400,
  description: "How long a just-minted web session lives until its credential first comes back (a page load that never returns leaves nothing lasting).",
});

export const CHANNEL_WEB_SESSIONS_PER_HOUR = wholeNumber("CHANNEL_WEB_SESSIONS_PER_HOUR", {
  area: "channels",
  default: 100,
  min: 1,
  max: 100_000,
  description:
    "New web sessions (the chat page's first visit, the widget's session, a rotation) one client network (an IPv4 address or an IPv6 /64) may mint: a burst of this many, refilled at this many per hour. One more is refused with 429 too_many_sessions.",
});

export const CHANNEL_WEB_UPLOADS_PER_HOUR = wholeNumber("CHANNEL_WEB_UPLOADS_PER_HOUR", {
  area: "channels",
  default: 60,
  min: 1,
  max: 100_000,
  description:
    "Attachments one client network (an IPv4 address or an IPv6 /64) may upload to the web chat, across all identities: a burst of this many, refilled at this many per hour. One more is refused with 429 too_many_uploads.",
});

export type CookieSecure = "auto" | "true" | "false";

export const CHANNEL_WEB_COOKIE_SECURE = defineSetting<Setting<CookieSecure>>({
  name: "CHANNEL_WEB_COOKIE_SECURE",
  area: "channels",
  type: "string",
  default: "auto",
  enum: ["auto", "true", "false"],
  overlay: true,
  secret: false,
  description: "The session cookie's `Secure` flag: `auto` sets it when the page was requested over https; `true` always; `false` never.",
  read(env, errors) {
    const raw = envString(env, "CHANNEL_WEB_COOKIE_SECURE")?.trim();
    if (!raw) return "auto";
    if (raw === "auto" || raw === "true" || raw === "false") return raw;
    errors.push("CHANNEL_WEB_COOKIE_SECURE must be auto, true or false");
    return "auto";
  },
});

export const CHANNEL_WEB_MAX_STREAMS_PER_VISITOR = wholeNumber("CHANNEL_WEB_MAX_STREAMS_PER_VISITOR", {
  area: "channels",
  default: 4,
  min: 1,
  max: 32,
  description: "Live streams one web visitor may hold open at once (tabs of the same conversation); one more is refused with 429.",
});

export const CHANNEL_WEB_MAX_BODY_BYTES = wholeNumber("CHANNEL_WEB_MAX_BODY_BYTES", {
  area: "channels",
  default: 65_536,
  min: 1_024,
  max: 1_048_576,
  description: "The largest body a web door reads; a larger one is refused with 413 before it is parsed.",
});

export const CHANNEL_WEB_GATE_GUESSES = wholeNumber("CHANNEL_WEB_GATE_GUESSES", {
  area: "channels",
  default: 10,
  min: 1,
  max: 1_000,
  description: "Entry-code checks one client (network bucket) may make per gated identity within CHANNEL_WEB_GATE_WINDOW_SECONDS.",
});

export const CHANNEL_WEB_GATE_WINDOW_SECONDS = wholeNumber("CHANNEL_WEB_GATE_WINDOW_SECONDS", {
  area: "channels",
  default: 300,
  min: 10,
  max: 86_400,
  description: "The window of CHANNEL_WEB_GATE_GUESSES.",
});

export const CHANNEL_WEB_PAGE_TITLE = text("CHANNEL_WEB_PAGE_TITLE", {
  area: "channels",
  description: "The chat page's title. Unset: \"Chat\" in the page's language (the widget's heading is its `data-title`, likewise).",
});

export const WEB_SETTINGS = [
  CHANNEL_WEB_SESSION_TTL_SECONDS,
  CHANNEL_WEB_PENDING_TTL_SECONDS,
  CHANNEL_WEB_SESSIONS_PER_HOUR,
  CHANNEL_WEB_UPLOADS_PER_HOUR,
  CHANNEL_WEB_COOKIE_SECURE,
  CHANNEL_WEB_MAX_STREAMS_PER_VISITOR,
  CHANNEL_WEB_MAX_BODY_BYTES,
  CHANNEL_WEB_GATE_GUESSES,
  CHANNEL_WEB_GATE_WINDOW_SECONDS,
  CHANNEL_WEB_PAGE_TITLE,
] as const;

export interface WebSettings {
  sessionTtlSeconds: number;
  pendingTtlSeconds: number;
  sessionsPerHour: number;
  uploadsPerHour: number;
  cookieSecure: CookieSecure;
  maxStreamsPerVisitor: number;
  maxBodyBytes: number;
  gateGuesses: number;
  gateWindowSeconds: number;
  /** Null: the page's language's own word for "Chat". */
  pageTitle: string | null;
}

export function parseWebSettings(env: EnvVars, errors: string[]): WebSettings {
  return {
    sessionTtlSeconds: CHANNEL_WEB_SESSION_TTL_SECONDS.read(env, errors),
    pendingTtlSeconds: CHANNEL_WEB_PENDING_TTL_SECONDS.read(env, errors),
    sessionsPerHour: CHANNEL_WEB_SESSIONS_PER_HOUR.read(env, errors),
    uploadsPerHour: CHANNEL_WEB_UPLOADS_PER_HOUR.read(env, errors),
    cookieSecure: CHANNEL_WEB_COOKIE_SECURE.read(env, errors),
    maxStreamsPerVisitor: CHANNEL_WEB_MAX_STREAMS_PER_VISITOR.read(env, errors),
    maxBodyBytes: CHANNEL_WEB_MAX_BODY_BYTES.read(env, errors),
    gateGuesses: CHANNEL_WEB_GATE_GUESSES.read(env, errors),
    gateWindowSeconds: CHANNEL_WEB_GATE_WINDOW_SECONDS.read(env, errors),
    pageTitle: CHANNEL_WEB_PAGE_TITLE.read(env, errors)?.slice(0, 200) ?? null,
  };
}
