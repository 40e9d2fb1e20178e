/**
 * Telegram rich parts: media, location and inline keyboards.
 *
 * - media: `sendPhoto` / `sendVideo` / `sendAudio` / `sendDocument`, one per item, with its caption
 *   (a `telegram-file:` reference is sent as its `file_id`).
 * - location: `sendVenue` when both name and address are given, else `sendLocation`.
 * - options / sections: one message whose inline keyboard has one button per option (sections
 *   become consecutive rows; the keyboard has no section titles). A reply button's callback data is
 *   the option text, which the inbound door reads back as the next message's text (so it must fit
 *   Telegram's 64 bytes); a link button opens its url. Option descriptions are not shown. The
 *   footer is appended to the text; a header turns the message into that media with the text as
 *   its caption and the keyboard attached.
 * - answer feedback: the answer's last chunk with a one-row keyboard, 👍 and 👎, whose callback
 *   data names the answer's record (src/channels/rich/feedback.ts).
 */
import type { SendDeps, SendResult } from "../adapter";
import type { Attachment } from "../../shared/media";
import type { RichOption, RichPlan, RichSender, RichStep } from "./types";
import { FEEDBACK_LABELS, feedbackReplyId } from "./feedback";

const METHODS: Record<Attachment["kind"], [method: string, field: string]> = {
  image: ["sendPhoto", "photo"],
  video: ["sendVideo", "video"],
  audio: ["sendAudio", "audio"],
  document: ["sendDocument", "document"],
};

/** Telegram's bound on `callback_data`. */
export const TELEGRAM_CALLBACK_DATA_BYTES = 64;

type Call = (method: string, payload: Record<string, unknown>, deps: SendDeps) => Promise<SendResult>;

export function makeTelegramRich(call: Call, filePrefix: string): RichSender {
  const ref = (m: Attachment) => (m.url.startsWith(filePrefix) ? m.url.slice(filePrefix.length) : m.url);
  const mediaStep = (m: Attachment, caption: string | undefined, extra: Record<string, unknown> = {}): RichStep => {
    const [method, field] = METHODS[m.kind];
    return { method, payload: { [field]: ref(m), ...(caption ? { caption } : {}), ...extra } };
  };
  const button = (o: RichOption): Record<string, unknown> | null => {
    if (o.kind === "link") return { text: o.text, url: o.url };
    return new TextEncoder().encode(o.text).byteLength <= TELEGRAM_CALLBACK_DATA_BYTES ? { text: o.text, callback_data: o.text } : null;
  };

  return {
    takesBody: (part) => Boolean(part.options?.length || part.sections?.length),
    plan(part, body): RichPlan {
      const steps: RichStep[] = (part.media ?? []).map((m) => mediaStep(m, m.caption));
      if (part.location) {
        const l = part.location;
        steps.push(
          l.name && l.address
            ? { method: "sendVenue", payload: { latitude: l.latitude, longitude: l.longitude, title: l.name, address: l.address } }
            : { method: "sendLocation", payload: { latitude: l.latitude, longitude: l.longitude } },
        );
      }
      const options = part.options ?? part.sections?.flatMap((s) => s.rows) ?? [];
      if (options.length) {
        const text = part.footer ? `${body}\n\n${part.footer}` : body;
        if (!text.trim()) return { ok: false, reason: "a keyboard message needs text" };
        const rows: Array<Array<Record<string, unknown>>> = [];
        for (const o of options) {
          const b = button(o);
          if (!b) return { ok: false, reason: `a reply option's text must fit ${TELEGRAM_CALLBACK_DATA_BYTES} bytes` };
          rows.push([b]);
        }
        const reply_markup = { inline_keyboard: rows };
        steps.push(part.header ? mediaStep(part.header, text, { reply_markup }) : { method: "sendMessage", payload: { text, reply_markup } });
      }
      return { ok: true, steps };
    },
    feedback(body, messageId): RichPlan {
      if (!body.trim()) return { ok: false, reason: "a keyboard message needs text" };
      const row = (["up", "down"] as const).map((r) => ({ text: FEEDBACK_LABELS[r], callback_data: feedbackReplyId(r, messageId) }));
      if (row.some((b) => new TextEncoder().encode(b.callback_data).byteLength > TELEGRAM_CALLBACK_DATA_BYTES))
        return { ok: false, reason: `a feedback button's data must fit ${TELEGRAM_CALLBACK_DATA_BYTES} bytes` };
      return { ok: true, steps: [{ method: "sendMessage", payload: { text: body, reply_markup: { inline_keyboard: [row] } } }] };
    },
    send: (step, args, deps) => call(step.method as string, { chat_id: args.to, ...(step.payload as Record<string, unknown>) }, deps),
  };
}
