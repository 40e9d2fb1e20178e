/**
 * Browser notifications of new waiting threads. The permission is asked only when the operator
 * presses the button, never on load; once granted, each thread that enters the Waiting view while
 * the console is open raises one notification (the threads already waiting when it started do
 * not). Clicking it opens the thread in the inbox. It says the route and the customer's address,
 * nothing the customer wrote.
 */
import { h } from "../dom";
import type { InboxItem } from "../types";
import { inboxHref } from "../ui";

export class WaitingNotifier {
  readonly el = h("p", { class: "notify" });
  /** The waiting threads seen last (null: not read yet, so the first read notifies nothing). */
  private known: Set<string> | null = null;
  private on = typeof Notification !== "undefined" && Notification.permission === "granted";
  private readonly button = h("button", { type: "button" });
  private readonly state = h("span", { class: "muted" });
  private shown: Notification[] = [];

  /** `waiting()` reads the Waiting view when the list shows another one. */
  constructor(private readonly waiting: () => Promise<InboxItem[]>) {
    if (typeof Notification === "undefined") {
      this.el.hidden = true;
      return;
    }
    this.button.addEventListener("click", () => void this.toggle());
    this.el.append(this.button, " ", this.state);
    this.paint();
  }

  private async toggle(): Promise<void> {
    if (this.on) {
      this.on = false;
    } else {
      const answer = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
      this.on = answer === "granted";
      this.known = null;
      if (this.on) await this.check(null);
    }
    this.paint();
  }

  private paint(): void {
    const denied = Notification.permission === "denied";
    this.button.textContent = this.on ? "Turn off notifications" : "Notify me of new waiting threads";
    this.button.disabled = denied;
    this.state.textContent = denied ? "Notifications are blocked for this site in the browser." : this.on ? "Notifications on." : "";
  }

  /** Compares the waiting threads now (`items`, or read when null) with the last seen, and notifies the new ones. */
  async check(items: InboxItem[] | null): Promise<void> {
    if (!this.on) return;
    let now: InboxItem[];
    try {
      now = items ?? (await this.waiting());
    } catch {
      return;
    }
    const key = (i: InboxItem) => `${i.route_name}\u0000${i.thread_id}`;
    const before = this.known;
    this.known = new Set(now.map(key));
    if (!before) return;
    for (const i of now) {
      if (before.has(key(i))) continue;
      let n: Notification;
      try {
        n = new Notification(`Waiting on ${i.route_name}`, { body: i.client_address ?? i.thread_id, tag: `${i.route_name} ${i.thread_id}` });
      } catch {
        // A browser that shows notifications only through a service worker: the list still shows it.
        return;
      }
      n.onclick = () => {
        window.focus();
        location.hash = inboxHref(i.route_name, i.thread_id);
        n.close();
      };
      this.shown.push(n);
    }
    this.shown = this.shown.slice(-20);
  }

  dispose(): void {
    for (const n of this.shown) n.close();
    this.shown = [];
  }
}
