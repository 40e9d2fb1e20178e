/**
 * Answer feedback buttons (docs/channels.md, "Answer feedback buttons"): on a route that asks for
 * them, the target's answer goes out with two reply buttons, 👍 and 👎, whose reply id names the
 * answer's record: `tai-fb:<up|down>:<message id>`. A tap comes back through the channel's signed
 * webhook as an `AnswerFeedbackTap` (src/channels/adapter.ts) instead of a message: it rates the
 * record and runs no turn.
 *
 * The id in the button is not what vouches for the tap: a modified client can send any reply id.
 * What vouches is the webhook's own sender (the chat, the Slack conversation, the WhatsApp number),
 * which the provider signs; the record is rated only when it is that sender's own answer
 * (src/conversations/thread/answer-feedback.ts). A forged id can therefore only rate the forger's
 * own answers, which the buttons let them rate anyway.
 */
/** The prefix of a feedback button's reply id. */
export const FEEDBACK_REPLY_PREFIX = "tai-fb:";

export type FeedbackRating = "up" | "down";

/** The buttons' labels (short enough for every channel: WhatsApp's 20 characters). */
export const FEEDBACK_LABELS: Readonly<Record<FeedbackRating, string>> = { up: "👍 Helpful", down: "👎 Not helpful" };

/** The text the buttons go under when the answer itself cannot carry them (too long for an interactive body). */
export const FEEDBACK_QUESTION = "Was this answer helpful?";

const REPLY_ID = /^tai-fb:(up|down):([A-Za-z0-9_-]{1,128})$/;

/** The reply id of the `rating` button under record `messageId`'s answer. Pure. */
export function feedbackReplyId(rating: FeedbackRating, messageId: string): string {
  return `${FEEDBACK_REPLY_PREFIX}${rating}:${messageId}`;
}

/** The rating and record a reply id names, or null when it is no feedback button's. Pure. */
export function parseFeedbackReplyId(id: string | undefined | null): { rating: FeedbackRating; message_id: string } | null {
  const m = id ? REPLY_ID.exec(id) : null;
  return m ? { rating: m[1] as FeedbackRating, message_id: m[2] } : null;
}
