/**
 * The channel registry: every adapter this build knows, in listing order. A channel is live only
 * when its secrets are set (decisions §11: an unconfigured channel has no doors and is not listed).
 * Adding a fifth channel is one new adapter file plus one entry here.
 */
import type { ChannelAdapter, ChannelCapabilities, ChannelEnv } from "./adapter";
import { slackAdapter } from "./slack";
import { telegramAdapter } from "./telegram";
import { twilioAdapter } from "./twilio";
import { webAdapter } from "./web";
import { whatsappAdapter } from "./whatsapp";

export const channelAdapters: readonly ChannelAdapter[] = Object.freeze([twilioAdapter, whatsappAdapter, telegramAdapter, slackAdapter, webAdapter]);

/** The adapter registered under `name`, configured or not; undefined for an unknown name. */
export function adapterFor(name: string): ChannelAdapter | undefined {
  return channelAdapters.find((a) => a.name === name);
}

/** The adapters whose required secrets are all set in `env`. */
export function configuredChannels(env: ChannelEnv): ChannelAdapter[] {
  return channelAdapters.filter((a) => a.isConfigured(env));
}

/** One item of `GET /api/channels`. */
export interface ChannelListItem {
  name: string;
  capabilities: ChannelCapabilities;
  /** The channel's `max_message_chars` entry; null when the map lacks it (sends then fail loudly). */
  max_message_chars: number | null;
}

/** The `GET /api/channels` listing: configured channels with capabilities and split caps. */
export function channelListing(env: ChannelEnv, maxMessageChars: Readonly<Record<string, number>>): ChannelListItem[] {
  return configuredChannels(env).map((a) => ({
    name: a.name,
    capabilities: { ...a.capabilities },
    max_message_chars: Object.hasOwn(maxMessageChars, a.name) ? maxMessageChars[a.name] : null,
  }));
}
