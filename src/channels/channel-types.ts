/**
 * What a channel send takes and gives back, and what a channel can carry: the types the adapter
 * interface (adapter.ts) and the rich parts (rich/) share. They sit in this leaf so that neither of
 * those two imports the other for them (a type-only import circle is still a circle).
 */
import type { EnvVars } from "../platform/env";

/**
 * The Worker env as an adapter sees it: the `CHANNEL_*` vars of decisions §11 (wrangler [vars],
 * secrets, .dev.vars), read by name. The env carries bindings too, so an adapter reads only
 * strings, through `envString`.
 */
export type ChannelEnv = EnvVars;

/** What a channel can carry besides plain text (decisions §11 "Capabilities"). */
export interface ChannelCapabilities {
  media: boolean;
  location: boolean;
  template: boolean;
  interactive: boolean;
  form: boolean;
  /** Shows the participant that an answer is being prepared (the adapter's `typing`; docs/channels.md "Typing"). */
  typing: boolean;
}

export interface SendDeps {
  /** globalThis.fetch in production; a recording fake in tests. */
  fetch: typeof fetch;
  env: ChannelEnv;
  /** `delivery_send_timeout_seconds` × 1000; bounds the request and reading its answer. */
  timeoutMs: number;
  /**
   * The thread's own transcript, where the web channel "sends": given only by a thread's delivery
   * to a web record (the web adapter refuses a send without it). Returns the entry's seq.
   */
  transcript?: (text: string, part: unknown) => number | Promise<number | null>;
}

/**
 * The outcome of one send. `permanent: true` is a provider refusal (the record goes `failed`
 * without retry); `false` is transient (timeout, network, 5xx, rate limit: retry with backoff).
 * `provider_message_id` is null only when the provider accepted but named no id (no receipt can
 * match it; the grace period completes the record). `reason` never carries secrets or user text.
 */
export type SendResult =
  | { ok: true; provider_message_id: string | null }
  | { ok: false; permanent: boolean; status?: number; reason: string; retry_after_seconds?: number };
