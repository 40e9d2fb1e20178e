/** Shared pieces of the views: error boxes, the status line, chips, times, busy buttons. */
import { messageOf } from "./api";
import { h } from "./dom";

/** An error box: empty until `show`; role=alert so a screen reader reads the API's message. */
export function errorBox(): { el: HTMLElement; show: (err: unknown) => void; clear: () => void } {
  const el = h("p", { class: "error", role: "alert", hidden: true });
  return {
    el,
    show: (err) => {
      el.textContent = messageOf(err);
      el.hidden = false;
    },
    clear: () => {
      el.textContent = "";
      el.hidden = true;
    },
  };
}

/** Announces `text` in the page's polite live region. */
export function announce(text: string): void {
  const s = document.getElementById("status");
  if (!s) return;
  s.textContent = text;
}

/** A delivery status as a chip (colour is never the only cue: the word is always there). */
export function statusChip(status: string): HTMLElement {
  return h("span", { class: `chip st-${status.replace(/[^a-z_]/g, "")}` }, status.replace(/_/g, " "));
}

export function when(iso: string | null | undefined): HTMLElement | string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return h("time", { datetime: iso, title: iso }, d.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" }));
}

/** Runs `work` with `button` disabled (and marked busy) meanwhile; errors go to `errors`. */
export async function busy(
  button: HTMLButtonElement | null,
  errors: { show: (e: unknown) => void; clear: () => void },
  work: () => Promise<void>,
): Promise<void> {
  errors.clear();
  if (button) {
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
  }
  try {
    await work();
  } catch (err) {
    errors.show(err);
  } finally {
    if (button) {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    }
  }
}

/** A loading placeholder. */
export function loading(what: string): HTMLElement {
  return h("p", { class: "muted" }, `Loading ${what}…`);
}

/** The hash link of a thread. */
export function threadHref(route: string, threadId: string): string {
  return `#/conversations/${encodeURIComponent(route)}/${encodeURIComponent(threadId)}`;
}
