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

/** The hash link of a thread opened from the inbox. */
export function inboxHref(route: string, threadId: string): string {
  return `#/inbox/${encodeURIComponent(route)}/${encodeURIComponent(threadId)}`;
}

/** A span of time, short: "45 s", "12 min 05 s", "3 h 04 min", "2 d 5 h". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${pad(Math.floor((s % 3600) / 60))} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/**
 * A customer's waiting clock: how long since `since`, and "overdue" once past `dueMs` (the thread's
 * `sla_due_at`) or when the alert already went (`overdue`). Every clock on the page ticks together.
 */
export function waitingClock(since: string, dueMs: number | null, overdue = false): HTMLElement {
  const el = h("span", { class: "clock", role: "timer", "data-since": Date.parse(since) });
  setClockDue(el, dueMs, overdue);
  paintClock(el, Date.now());
  startClocks();
  return el;
}

/** Tells a clock when its wait is overdue. */
export function setClockDue(el: HTMLElement, dueMs: number | null, overdue = false): void {
  if (dueMs !== null) el.dataset.due = String(dueMs);
  if (overdue) el.dataset.overdue = "1";
  paintClock(el, Date.now());
}

function paintClock(el: HTMLElement, now: number): void {
  const since = Number(el.dataset.since);
  const due = el.dataset.due ? Number(el.dataset.due) : null;
  const late = el.dataset.overdue === "1" || (due !== null && now >= due);
  el.textContent = `waiting ${duration(now - since)}${late ? " · overdue" : ""}`;
  el.classList.toggle("overdue", late);
}

let ticking: number | undefined;

/** Repaints every clock now. */
export function tickClocks(): void {
  const now = Date.now();
  for (const el of document.querySelectorAll<HTMLElement>(".clock[data-since]")) paintClock(el, now);
}

function startClocks(): void {
  ticking ??= window.setInterval(tickClocks, 1000);
}
