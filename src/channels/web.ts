/**
 * The web channel's adapter (docs/channels.md "Web"). A web visitor reaches the service through the
 * public doors of src/web-chat/routes/visitor.ts, not through a provider's webhook, so this adapter has
 * no webhook doors. Its "send" writes into the visitor's transcript in the thread object, which
 * pushes the entry to the open pages: there is no provider and no receipt, and a sent answer settles
 * after the delivery grace like every receipt-less channel.
 *
 * Rich parts: media cards and option chips ride one entry with the answer's text; an ask-less
 * form's schema too. Templates (a provider's pre-approved messages) and locations have no meaning
 * on a page and are refused before anything is sent.
 */
import type { ChannelAdapter, SendDeps, SendResult } from "./adapter";
import type { RichPart, RichSender, RichStep } from "./rich/types";

async function toTranscript(text: string, part: unknown, deps: SendDeps): Promise<SendResult> {
  if (!deps.transcript) return { ok: false, permanent: true, reason: "a web visitor is reached only through its thread" };
  try {
    const seq = await deps.transcript(text, part);
    if (seq === null) return { ok: false, permanent: true, reason: "no such web visitor" };
    return { ok: true, provider_message_id: `web-${seq}` };
  } catch {
    return { ok: false, permanent: false, reason: "the visitor's conversation could not be reached" };
  }
}

const webRich: RichSender = {
  // The chips and cards sit under the answer's last text, in one entry.
  takesBody: () => true,
  plan(part: RichPart, body: string) {
    const { media, options, sections, header, footer, schema } = part;
    const shown: Record<string, unknown> = {};
    if (media) shown.media = media;
    if (options) shown.options = options;
    if (sections) shown.sections = sections;
    if (header) shown.header = header;
    if (footer) shown.footer = footer;
    if (schema) shown.schema = schema;
    const step: RichStep = { text: body, part: shown };
    return { ok: true, steps: [step] };
  },
  async send(step, _args, deps) {
    return toTranscript(typeof step.text === "string" ? step.text : "", step.part ?? null, deps);
  },
};

export const webAdapter: ChannelAdapter = {
  name: "web",
  // No typing signal: the page learns of the turn from its own frames (docs/web-channel-client.md).
  capabilities: { media: true, location: false, template: false, interactive: true, form: true, typing: false },
  doors: {},
  ackStatus: 200,
  // Nothing to configure: the web channel needs no provider secret. A web route exists only when
  // an operator creates one.
  isConfigured: () => true,
  async verify() {
    return { ok: false, status: 404, reason: "the web channel has no webhook" };
  },
  parse() {
    return { events: [], ignored: 0 };
  },
  async send(args, deps) {
    return toTranscript(args.text, null, deps);
  },
  rich: webRich,
};
