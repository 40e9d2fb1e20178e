/**
 * The 👍/👎 buttons under an answer (docs/web-channel-client.md, "Answer feedback"): the visitor
 * says whether it helped, `POST feedback {message_id, rating}`. The stream says which entries may be
 * rated (an answer entry carries `rating`, null when unrated) and what the visitor said before, so
 * a reload shows it. Pressing the pressed button takes the rating back (`rating: null`).
 *
 * An answer may span several entries (a text and its card); each shows the buttons, and all of
 * them follow one rating.
 */
import { el } from "./dom";
import { t } from "./strings";
import type { StringKey } from "../../src/web-chat/strings/en";

export type Rating = "up" | "down";

const LABELS: Record<Rating, [icon: string, name: StringKey]> = { up: ["👍", "feedback.up"], down: ["👎", "feedback.down"] };

/** Sends a rating (null: taken back); resolves with the rating in force, rejects when it was not taken. */
export type SendRating = (messageId: string, rating: Rating | null) => Promise<Rating | null>;

/** Shows `rating` on every bar of `messageId` in `root`. */
function paint(root: ParentNode, messageId: string, rating: Rating | null): void {
  for (const bar of root.querySelectorAll<HTMLElement>(".tai-rate")) {
    if (bar.dataset.messageId !== messageId) continue;
    bar.dataset.rating = rating ?? "";
    for (const b of bar.querySelectorAll<HTMLButtonElement>("button[data-rating]")) b.setAttribute("aria-pressed", String(b.dataset.rating === rating));
  }
}

/** The buttons of answer `messageId`, showing `rating`; `root` is where the other bars of the same answer are. */
export function feedbackBar(doc: Document, root: () => ParentNode, messageId: string, rating: Rating | null, send: SendRating): HTMLElement {
  const bar = el(doc, "div", { class: "tai-rate", role: "group", "aria-label": t("feedback.ask"), "data-message-id": messageId });
  bar.dataset.rating = rating ?? "";
  for (const r of ["up", "down"] as const) {
    const [icon, key] = LABELS[r];
    const name = t(key);
    const b = el(doc, "button", { type: "button", class: "tai-rate-button", "aria-label": name, title: name, "data-rating": r }, icon);
    b.setAttribute("aria-pressed", String(rating === r));
    b.addEventListener("click", () => {
      // One rating in flight per answer. The buttons stay focusable meanwhile (a disabled button
      // would drop the keyboard's focus); they only say they are busy.
      if (bar.getAttribute("aria-busy") === "true") return;
      const before = (bar.dataset.rating || null) as Rating | null;
      const next = before === r ? null : r;
      bar.setAttribute("aria-busy", "true");
      paint(root(), messageId, next);
      send(messageId, next)
        .then(
          (kept) => paint(root(), messageId, kept),
          () => paint(root(), messageId, before),
        )
        .finally(() => bar.setAttribute("aria-busy", "false"));
    });
    bar.append(b);
  }
  return bar;
}
