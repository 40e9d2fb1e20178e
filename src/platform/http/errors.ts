/**
 * The one error contract: handlers throw HttpError; app.onError renders `{error, code?}`.
 * Messages must never carry secrets or user-supplied text; name the field or bound instead.
 *
 * Every 5xx carries a code from SERVER_ERROR_CODES (docs/operations.md, "Every 5xx and its cause")
 * and is logged once, by app.onError, with the reason the site gave; test/hardening/five-hundreds.test.ts
 * holds every site to it.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly extra?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
    /** For a 5xx: why, for the operator's log line only (never sent; never user text or secrets). */
    readonly reason?: string,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

export const badRequest = (message: string) => new HttpError(400, message);
export const unauthorized = (message = "Unauthorized") => new HttpError(401, message);
export const forbidden = () => new HttpError(403, "Forbidden");
export const notFound = (message = "not found") => new HttpError(404, message);
export const conflict = (message: string) => new HttpError(409, message);
export const tooManyRequests = (message: string, retryAfterSeconds?: number) =>
  new HttpError(429, message, undefined, undefined, retryAfterSeconds !== undefined ? retryAfterHeader(retryAfterSeconds) : undefined);

/** A `Retry-After` header of whole seconds, at least 1. */
export function retryAfterHeader(seconds: number): Record<string, string> {
  return { "Retry-After": String(Math.max(1, Math.ceil(seconds))) };
}

/**
 * Every code a 5xx answer carries, with its status. docs/operations.md lists each with its cause,
 * what the operator does and whether the caller retries; the hardening suite checks both lists
 * agree and that no site answers a 5xx outside this one.
 */
export const SERVER_ERROR_CODES = {
  // 500: a fault of this deployment.
  internal_error: 500,
  "invalid-configuration": 500,
  "tool-denied": 500,
  "tool-timeout": 500,
  "tool-transport": 500,
  "tool-http-status": 500,
  "tool-non-json": 500,
  "tool-error": 500,
  // 501: a feature this deployment has not switched on.
  "conversations-not-configured": 501,
  "states-not-configured": 501,
  "interactions-not-configured": 501,
  "connectors-not-configured": 501,
  "marketplace-not-configured": 501,
  "tool-runs-not-configured": 501,
  "storage-not-configured": 501,
  "tool-meta-not-configured": 501,
  "access-control-not-configured": 501,
  "settings-encryption-not-configured": 501,
  "marketplace-registry-not-configured": 501,
  "channel-capability-not-configured": 501,
  "notification-sender-not-configured": 501,
  "connector-provider-not-configured": 501,
  // 502: an upstream answered, wrongly or with a refusal.
  "marketplace-registry-unavailable": 502,
  "marketplace-registry-invalid": 502,
  PLUGIN_BUNDLE_INVALID: 502,
  channel_send_refused: 502,
  // 503: try again later.
  queue_full: 503,
  inbound_unavailable: 503,
  hook_fire_failed: 503,
  agent_memory_unavailable: 503,
  extensions_contended: 503,
  settings_reloading: 503,
  marketplace_locked: 503,
  channel_send_unavailable: 503,
  attachment_store_unavailable: 503,
  access_changes_unpublished: 503,
  platform_overloaded: 503,
  platform_unavailable: 503,
} as const satisfies Record<string, 500 | 501 | 502 | 503 | 504>;

export type ServerErrorCode = keyof typeof SERVER_ERROR_CODES;

/**
 * A 5xx answer: its status comes from the code. `reason` goes to the log line only; `retryAfterSeconds`
 * sets `Retry-After`; `extra` adds fields to the body.
 */
export function serverError(
  code: ServerErrorCode,
  message: string,
  opts: { reason?: string; retryAfterSeconds?: number; extra?: Record<string, unknown> } = {},
): HttpError {
  const headers = opts.retryAfterSeconds !== undefined ? retryAfterHeader(opts.retryAfterSeconds) : undefined;
  return new HttpError(SERVER_ERROR_CODES[code], message, code, opts.extra, headers, opts.reason);
}

/** The 501 of a feature switched off: code `<feature>-not-configured`. */
export const notConfigured = (feature: string, message: string) =>
  new HttpError(501, message, `${feature}-not-configured`, undefined, undefined, `${feature} is not configured`);

/** A platform fault a retry can outlive, classified from what the runtime threw. */
export interface PlatformFailure {
  code: "platform_overloaded" | "platform_unavailable";
  reason: string;
}

/**
 * Classifies an error thrown by a Durable Object or D1 call: the runtime marks these with
 * `overloaded`, `retryable` or `durableObjectReset`, or says so in fixed words of its own. Null for
 * anything else (a bug, an input the code did not expect): that stays a 500.
 */
export function platformFailure(err: unknown): PlatformFailure | null {
  if (typeof err !== "object" || err === null) return null;
  const e = err as { overloaded?: unknown; retryable?: unknown; durableObjectReset?: unknown; message?: unknown };
  const message = typeof e.message === "string" ? e.message : "";
  if (e.overloaded === true || /\boverloaded\b|too many requests queued/i.test(message))
    return { code: "platform_overloaded", reason: "a Durable Object or D1 database is overloaded (too many requests queued)" };
  if (e.durableObjectReset === true || /\breset because\b|caused object to be reset|object was reset/i.test(message))
    return { code: "platform_unavailable", reason: "a Durable Object was reset (new code deployed, a storage timeout or an internal storage error)" };
  if (/network connection lost|connection (was )?(lost|reset|closed)|disconnected/i.test(message))
    return { code: "platform_unavailable", reason: "the connection to a Durable Object or D1 was lost" };
  if (/exceeded timeout|timed out/i.test(message) && /storage|durable object|d1/i.test(message))
    return { code: "platform_unavailable", reason: "a Durable Object or D1 storage operation timed out" };
  if (e.retryable === true) return { code: "platform_unavailable", reason: "the runtime marked the failure retryable" };
  return null;
}

/**
 * Why an unexpected error happened, for a log line: its name and message with URLs, quoted spans
 * and long runs cut (a URL may hold a token, a parser's message quotes its input), and where it was
 * thrown; never the input itself.
 */
export function describeFailure(err: unknown): string {
  if (!(err instanceof Error)) return `non-error thrown (${typeof err})`;
  const message = err.message
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/\S*/gi, "<url>")
    .replace(/(["'`])(?:(?!\1).){0,400}\1/g, "…")
    .replace(/\S{64,}/g, "…")
    .slice(0, 200);
  const at = (err.stack ?? "")
    .split("\n")
    .filter((l) => /^\s+at /.test(l))
    .slice(0, 3)
    .map((l) => l.trim().replace(/^at /, ""))
    .join(" < ");
  return `${err.name}: ${message}${at ? ` (at ${at})` : ""}`;
}
