/**
 * What one channel delivery sends, in order (pure): the answer's text chunks, in the channel's
 * markup (src/channels/markup.ts), then the rich part's provider requests. The delivery machine
 * counts accepted steps (`chunks_sent`), so a re-drive resumes after the last accepted one whether
 * it was a text chunk or a rich request.
 */
import { TOO_LONG_TEXT } from "../chunking";
import { type FormattedChunk, formatMarkdown, planFormatted } from "../markup";
import type { ChannelAdapter, SendDeps, SendResult } from "../adapter";
import { type RichPart, type RichStep, isEmptyPart, requiredCapabilities } from "./types";
import { FEEDBACK_QUESTION } from "./feedback";

export type OutboundStep = { kind: "text"; text: string } | { kind: "rich"; step: RichStep };

export type OutboundPlan =
  /** `tooLong`: the answer needed more than `max_outbound_chunks` messages; `steps` is then the fixed notice. */
  | { ok: true; steps: OutboundStep[]; tooLong: boolean }
  /** `capability`: the channel lacks a flag the part needs; `shape`: the channel cannot express the part. */
  | { ok: false; kind: "capability" | "shape"; error: string };

/**
 * Plans the provider messages for `text` plus an optional rich `part` on `adapter`'s channel.
 * `feedbackFor` (a record's message id) puts the answer feedback buttons under a text-only answer,
 * where the channel has them (src/channels/rich/feedback.ts): on its last chunk, or when that chunk
 * cannot carry them, under a short question of their own; never past `maxChunks`.
 */
export function planOutbound(
  adapter: ChannelAdapter,
  text: string,
  part: RichPart | null | undefined,
  maxChars: number,
  maxChunks: number,
  feedbackFor: string | null = null,
): OutboundPlan {
  const rich = part && !isEmptyPart(part) ? part : null;
  if (rich) {
    const missing = requiredCapabilities(rich).filter((cap) => !adapter.capabilities[cap]);
    if (missing.length || !adapter.rich) {
      const named = missing.length ? missing : requiredCapabilities(rich);
      return { ok: false, kind: "capability", error: `channel ${adapter.name} lacks the ${named.join(", ")} capability this message needs` };
    }
  }
  const markup = adapter.markup ?? null;
  const tooLong: OutboundPlan = {
    ok: true,
    steps: [{ kind: "text", text: markup ? formatMarkdown(markup.text, TOO_LONG_TEXT).text : TOO_LONG_TEXT }],
    tooLong: true,
  };
  // planFormatted drops blank chunks (some providers refuse blank messages) and is deterministic
  // for a given text, so step indexes stay stable across re-drives.
  const plan = planFormatted(markup?.text ?? null, text, maxChars, maxChunks);
  if (!plan.ok) return tooLong;
  const chunks = plan.chunks;
  // A rich part the adapter cannot send was refused above.
  const sender = adapter.rich;
  if (!rich || !sender) return { ok: true, steps: withFeedback(adapter, chunks, feedbackFor, maxChunks), tooLong: false };

  // A template is the whole outbound message (out-of-window sends admit nothing else): the text
  // stays the record's answer, for transcripts and search, and is not sent.
  if (rich.template) chunks.length = 0;
  const last = sender.takesBody(rich) ? chunks.pop() : undefined;
  const body = !last ? "" : markup ? formatMarkdown(markup.body, last.markdown).text : last.text;
  const richPlan = sender.plan(rich, body);
  if (!richPlan.ok) return { ok: false, kind: "shape", error: `channel ${adapter.name} cannot send this message: ${richPlan.reason}` };
  const steps: OutboundStep[] = [
    ...chunks.map((c): OutboundStep => ({ kind: "text", text: c.text })),
    ...richPlan.steps.map((s): OutboundStep => ({ kind: "rich", step: s })),
  ];
  if (steps.length > maxChunks) return tooLong;
  return { ok: true, steps, tooLong: false };
}

/** The text chunks of an answer, with its feedback buttons when asked for and the channel has them. */
function withFeedback(adapter: ChannelAdapter, chunks: FormattedChunk[], feedbackFor: string | null, maxChunks: number): OutboundStep[] {
  const steps = chunks.map((c): OutboundStep => ({ kind: "text", text: c.text }));
  const buttons = adapter.rich?.feedback;
  if (feedbackFor === null || !buttons || !chunks.length) return steps;
  // The last chunk goes as the buttons' message: in the markup a rich message's body takes.
  const last = chunks[chunks.length - 1];
  const body = adapter.markup ? formatMarkdown(adapter.markup.body, last.markdown).text : last.text;
  const joined = buttons(body, feedbackFor);
  if (joined.ok) return [...steps.slice(0, -1), ...joined.steps.map((step): OutboundStep => ({ kind: "rich", step }))];
  const alone = buttons(FEEDBACK_QUESTION, feedbackFor);
  if (!alone.ok || steps.length + alone.steps.length > maxChunks) return steps;
  return [...steps, ...alone.steps.map((step): OutboundStep => ({ kind: "rich", step }))];
}

/** Sends one planned step. Never throws. */
export function sendOutboundStep(adapter: ChannelAdapter, step: OutboundStep, args: { to: string; from: string }, deps: SendDeps): Promise<SendResult> {
  if (step.kind === "text") return adapter.send({ to: args.to, from: args.from, text: step.text }, deps);
  if (!adapter.rich) return Promise.resolve({ ok: false, permanent: true, reason: "channel sends no rich parts" });
  return adapter.rich.send(step.step, args, deps);
}
