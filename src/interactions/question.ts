/**
 * How a parked turn's question reaches the participant (docs/interactions.md "Inside a
 * thread"): the turn's answer is the question, delivered through the thread's own door. Reply
 * options travel as the channel's reply options (spec §4.9) and a form schema as its form, when the
 * channel advertises the capability and can express them (its rich sender plans them); otherwise
 * the options are numbered under the question as text and a schema is left out (the next inbound,
 * text or form, still answers). Pure.
 */
import type { ChannelAdapter } from "../channels/adapter";
import type { RichPart } from "../channels/rich/types";
import { numberedQuestion, replyOptions } from "./ask";
import type { InteractionState } from "./record";

export interface QuestionAnswer {
  answer: string;
  answer_part: RichPart | null;
}

/** The question as the turn's answer on `adapter`'s channel (undefined: an api door). */
export function questionAnswer(q: Pick<InteractionState, "question" | "options" | "schema">, adapter: ChannelAdapter | undefined): QuestionAnswer {
  const rich = adapter?.rich;
  if (rich && q.options?.length && adapter.capabilities.interactive) {
    const part: RichPart = { options: replyOptions(q.options) };
    if (rich.plan(part, q.question).ok) return { answer: q.question, answer_part: part };
  }
  if (rich && q.schema && adapter.capabilities.form) {
    const part: RichPart = { schema: q.schema };
    if (rich.plan(part, q.question).ok) return { answer: q.question, answer_part: part };
  }
  return { answer: numberedQuestion(q.question, q.options), answer_part: null };
}
