/**
 * Slack rich parts: media and interactive messages, as Block Kit blocks of `chat.postMessage`.
 *
 * - media: one message; an image is an image block, other kinds a link to the file.
 * - options / sections: one message: optional header media, the text as a section, one actions
 *   block of buttons (per section, a bold title then its actions), the footer as a context block.
 *   A reply button's value is the option id (else its text), which the inbound door reads back as
 *   `params.reply_id`; a link button opens its url. Option descriptions are not shown.
 * - answer feedback: the answer's last chunk as a section with an actions block of 👍 and 👎
 *   buttons, whose values name the answer's record (src/channels/rich/feedback.ts).
 * Every message also carries a plain `text` fallback for notifications.
 */

/** Slack's bound on a section block's text. */
const SECTION_TEXT_CHARS = 3000;
import type { SendDeps, SendResult } from "../adapter";
import type { Attachment } from "../../shared/media";
import type { RichOption, RichPlan, RichSender, RichStep } from "./types";
import { FEEDBACK_LABELS, feedbackReplyId } from "./feedback";
import { must } from "../../platform/must";

/** Escapes the three characters Slack's mrkdwn treats as control characters. */
function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function mediaBlock(m: Attachment): Record<string, unknown> {
  if (m.kind === "image") return { type: "image", image_url: m.url, alt_text: m.caption ?? m.filename ?? "image" };
  const label = m.filename ?? m.caption ?? m.kind;
  return { type: "section", text: { type: "mrkdwn", text: `<${m.url}|${esc(label)}>` } };
}

export function makeSlackRich(post: (message: Record<string, unknown>, deps: SendDeps) => Promise<SendResult>): RichSender {
  return {
    takesBody: (part) => Boolean(part.options?.length || part.sections?.length),
    plan(part, body): RichPlan {
      const steps: RichStep[] = [];
      if (part.media?.length) {
        const captions = part.media.map((m) => m.caption ?? m.filename).filter(Boolean);
        steps.push({ text: captions.length ? captions.join("\n") : "attachment", blocks: part.media.map(mediaBlock) });
      }
      if (part.options?.length || part.sections?.length) {
        if (!body.trim()) return { ok: false, reason: "an interactive message needs text" };
        let n = 0;
        const buttons = (rows: RichOption[]) =>
          rows.map((o) => {
            n += 1;
            const b: Record<string, unknown> = { type: "button", text: { type: "plain_text", text: o.text }, action_id: `option-${n}` };
            if (o.kind === "link") b.url = o.url;
            else b.value = o.id ?? o.text;
            return b;
          });
        const blocks: Array<Record<string, unknown>> = [];
        if (part.header) blocks.push(mediaBlock(part.header));
        blocks.push({ type: "section", text: { type: "mrkdwn", text: body } });
        if (part.sections?.length) {
          for (const s of part.sections) {
            blocks.push({ type: "section", text: { type: "mrkdwn", text: `*${esc(s.title)}*` } });
            blocks.push({ type: "actions", elements: buttons(s.rows) });
          }
        } else {
          blocks.push({ type: "actions", elements: buttons(must(part.options, "the options of a choice without sections")) });
        }
        if (part.footer) blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: esc(part.footer) }] });
        steps.push({ text: body, blocks });
      }
      return { ok: true, steps };
    },
    feedback(body, messageId): RichPlan {
      if (!body.trim()) return { ok: false, reason: "an interactive message needs text" };
      if (body.length > SECTION_TEXT_CHARS) return { ok: false, reason: `a section holds at most ${SECTION_TEXT_CHARS} characters` };
      const buttons = (["up", "down"] as const).map((r) => ({
        type: "button",
        text: { type: "plain_text", text: FEEDBACK_LABELS[r] },
        action_id: `feedback-${r}`,
        value: feedbackReplyId(r, messageId),
      }));
      return {
        ok: true,
        steps: [
          {
            text: body,
            blocks: [
              { type: "section", text: { type: "mrkdwn", text: body } },
              { type: "actions", elements: buttons },
            ],
          },
        ],
      };
    },
    send: (step, args, deps) => post({ channel: args.to, ...step }, deps),
  };
}
