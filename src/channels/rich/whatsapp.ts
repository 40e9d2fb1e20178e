/**
 * WhatsApp Cloud rich parts: media, location, templates, interactive messages and Flow forms.
 *
 * - media: one media message per item (`link`, or `id` for a `whatsapp-media:` reference).
 * - location: a location message.
 * - template: one template message with its header media, body parameters and quick-reply buttons.
 * - options: up to 3 reply options without descriptions → reply buttons; one link option →
 *   a `cta_url` message; otherwise a single-section list. sections → a list. A link option mixed
 *   with others, or inside sections, is refused (the Cloud API has no such message).
 * - header (image, video or document; reply buttons and `cta_url` only) and footer.
 * - schema (form): a Flow message. WhatsApp renders forms only through a published Flow, so its
 *   form subset needs `schema.flow_id`; `flow_cta` (button label), `screen` and `data` are optional.
 * - answer feedback: the answer's last chunk as the body of a reply-button message, 👍 and 👎,
 *   whose ids name the answer's record (src/channels/rich/feedback.ts); a body over the Cloud
 *   API's 1024 characters cannot carry them.
 * Interactive and Flow messages carry the text as their body; the others follow the text.
 */
import type { SendDeps, SendResult } from "../adapter";
import type { Attachment } from "../../shared/media";
import type { RichOption, RichPart, RichPlan, RichSender, RichStep, RichTemplate } from "./types";
import { FEEDBACK_LABELS, feedbackReplyId } from "./feedback";

const MAX_REPLY_BUTTONS = 3;
/** The Cloud API's bound on an interactive message's body. */
const MAX_INTERACTIVE_BODY = 1024;
/** The list message's button label (WhatsApp requires one). */
export const WHATSAPP_LIST_BUTTON = "Choose";
export const WHATSAPP_FLOW_CTA = "Open form";

type Post = (from: string, message: Record<string, unknown>, deps: SendDeps) => Promise<SendResult>;

export function makeWhatsAppRich(post: Post, mediaPrefix: string): RichSender {
  const ref = (m: Attachment): Record<string, unknown> => (m.url.startsWith(mediaPrefix) ? { id: m.url.slice(mediaPrefix.length) } : { link: m.url });
  const mediaObject = (m: Attachment, withCaption: boolean): Record<string, unknown> => {
    const o = ref(m);
    if (withCaption && m.caption && m.kind !== "audio") o.caption = m.caption;
    if (m.filename && m.kind === "document") o.filename = m.filename;
    return o;
  };

  function template(t: RichTemplate): Record<string, unknown> {
    const components: Array<Record<string, unknown>> = [];
    if (t.header_media) {
      components.push({ type: "header", parameters: [{ type: t.header_media.kind, [t.header_media.kind]: mediaObject(t.header_media, false) }] });
    }
    if (t.body_parameters?.length) components.push({ type: "body", parameters: t.body_parameters.map((text) => ({ type: "text", text })) });
    (t.buttons ?? []).forEach((b, i) =>
      components.push({ type: "button", sub_type: "quick_reply", index: String(i), parameters: [{ type: "payload", payload: b.payload }] }),
    );
    return { name: t.name, language: { code: t.language }, ...(components.length ? { components } : {}) };
  }

  const row = (o: RichOption) => ({ id: o.id ?? o.text, title: o.text, ...(o.description ? { description: o.description } : {}) });

  function interactive(part: RichPart, body: string): { ok: true; step: RichStep } | { ok: false; reason: string } {
    if (!body.trim()) return { ok: false, reason: "an interactive message needs text" };
    const decorations: Record<string, unknown> = {};
    if (part.footer) decorations.footer = { text: part.footer };
    const header = part.header;
    if (header) {
      if (header.kind === "audio") return { ok: false, reason: "a header must be an image, video or document" };
      decorations.header = { type: header.kind, [header.kind]: mediaObject(header, false) };
    }
    const listOf = (sections: Array<{ title?: string; rows: RichOption[] }>): { ok: true; step: RichStep } | { ok: false; reason: string } => {
      if (header) return { ok: false, reason: "list messages take no media header" };
      if (sections.some((s) => s.rows.some((o) => o.kind === "link"))) return { ok: false, reason: "link options cannot be sent in a list" };
      const action = { button: WHATSAPP_LIST_BUTTON, sections: sections.map((s) => ({ ...(s.title ? { title: s.title } : {}), rows: s.rows.map(row) })) };
      return { ok: true, step: { type: "interactive", interactive: { type: "list", body: { text: body }, action, ...decorations } } };
    };
    if (part.sections?.length) return listOf(part.sections);
    const options = part.options ?? [];
    const links = options.filter((o) => o.kind === "link");
    if (links.length) {
      if (options.length !== 1) return { ok: false, reason: "a link option cannot be combined with other options" };
      const action = { name: "cta_url", parameters: { display_text: links[0].text, url: links[0].url } };
      return { ok: true, step: { type: "interactive", interactive: { type: "cta_url", body: { text: body }, action, ...decorations } } };
    }
    if (options.length <= MAX_REPLY_BUTTONS && options.every((o) => !o.description)) {
      const buttons = options.map((o) => ({ type: "reply", reply: { id: o.id ?? o.text, title: o.text } }));
      return { ok: true, step: { type: "interactive", interactive: { type: "button", body: { text: body }, action: { buttons }, ...decorations } } };
    }
    return listOf([{ rows: options }]);
  }

  function flow(schema: Record<string, unknown>, body: string): { ok: true; step: RichStep } | { ok: false; reason: string } {
    if (!body.trim()) return { ok: false, reason: "a form message needs text" };
    const flowId = typeof schema.flow_id === "string" && schema.flow_id.trim() ? schema.flow_id.trim() : null;
    if (!flowId) return { ok: false, reason: "a form needs schema.flow_id naming a published WhatsApp Flow" };
    const screen = typeof schema.screen === "string" && schema.screen.trim() ? schema.screen.trim() : null;
    const data = typeof schema.data === "object" && schema.data !== null && !Array.isArray(schema.data) ? schema.data : null;
    const parameters: Record<string, unknown> = {
      flow_message_version: "3",
      flow_id: flowId,
      flow_cta: typeof schema.flow_cta === "string" && schema.flow_cta.trim() ? schema.flow_cta.trim() : WHATSAPP_FLOW_CTA,
      flow_action: screen ? "navigate" : "data_exchange",
    };
    if (screen) parameters.flow_action_payload = { screen, ...(data ? { data } : {}) };
    return { ok: true, step: { type: "interactive", interactive: { type: "flow", body: { text: body }, action: { name: "flow", parameters } } } };
  }

  return {
    takesBody: (part) => Boolean(part.options?.length || part.sections?.length || part.schema),
    plan(part, body): RichPlan {
      if (part.template) return { ok: true, steps: [{ type: "template", template: template(part.template) }] };
      const steps: RichStep[] = (part.media ?? []).map((m) => ({ type: m.kind, [m.kind]: mediaObject(m, true) }));
      if (part.location) {
        const l = part.location;
        steps.push({
          type: "location",
          location: { latitude: l.latitude, longitude: l.longitude, ...(l.name ? { name: l.name } : {}), ...(l.address ? { address: l.address } : {}) },
        });
      }
      const last = part.options?.length || part.sections?.length ? interactive(part, body) : part.schema ? flow(part.schema, body) : null;
      if (last && !last.ok) return last;
      if (last) steps.push(last.step);
      return { ok: true, steps };
    },
    feedback(body, messageId): RichPlan {
      if (!body.trim()) return { ok: false, reason: "an interactive message needs text" };
      if (body.length > MAX_INTERACTIVE_BODY) return { ok: false, reason: `an interactive body holds at most ${MAX_INTERACTIVE_BODY} characters` };
      const buttons = (["up", "down"] as const).map((r) => ({ type: "reply", reply: { id: feedbackReplyId(r, messageId), title: FEEDBACK_LABELS[r] } }));
      return { ok: true, steps: [{ type: "interactive", interactive: { type: "button", body: { text: body }, action: { buttons } } }] };
    },
    send: (step, args, deps) => post(args.from, { to: args.to, ...step }, deps),
  };
}
