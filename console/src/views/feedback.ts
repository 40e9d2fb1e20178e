/**
 * Answer feedback in the console (docs/console.md, "Answer feedback"): the mark a customer's rating
 * puts on an answer in a thread's transcript (the record's `feedback`), and the count of answers
 * rated down a listed thread carries (`rated_down`), which the inbox's "Rated down" view lists.
 * The words are always there: the colour and the thumb are never the only cue.
 */
import { h } from "../dom";

/** A record's rating as the read doors answer it. */
export interface Feedback {
  rating: "up" | "down";
  at: string;
}

/** The mark of a rated answer, or null when the customer gave no rating. */
export function ratingMark(feedback: Feedback | undefined): HTMLElement | null {
  if (!feedback) return null;
  const up = feedback.rating === "up";
  const at = new Date(feedback.at);
  const when = Number.isNaN(at.getTime()) ? "" : ` on ${at.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" })}`;
  return h(
    "span",
    { class: `chip rating rating-${feedback.rating}`, "data-rating": feedback.rating, title: `The customer rated this answer${when}` },
    up ? "👍 Rated helpful" : "👎 Rated not helpful",
  );
}

/** A listed thread's count of answers rated down, or null when none was. */
export function ratedDownChip(count: number | undefined): HTMLElement | null {
  if (!count) return null;
  return h("span", { class: "chip rating rating-down", "data-rated-down": String(count) }, `👎 ${count} rated down`);
}
