/**
 * A thread's inbox state and its controls (docs/inbox.md): status, assignee, since when the
 * customer waits (a live clock, overdue once past `sla_due_at`), labels, and Claim / Release /
 * Resolve / Snooze (1 hour, tomorrow 9:00, a chosen time) / Reopen. Each control is shown only when
 * `me` lists its door. A claim another operator holds is refused with 409 `thread_claimed`: the panel
 * names the holder and offers "Claim anyway" (`force`). A live refresh that changes nothing leaves
 * the controls in place, so the focus is never stolen.
 */
import { ApiError, call, path } from "../api";
import { DOORS } from "../doors";
import { type Child, field, fill, focus, h } from "../dom";
import { can, currentMe } from "../session";
import { announce, busy, errorBox, statusChip, tickClocks, waitingClock, when } from "../ui";

export interface InboxState {
  thread_id: string;
  status: "pending" | "open" | "snoozed" | "resolved";
  route_name: string | null;
  waiting_since: string | null;
  waiting_reason: string | null;
  assignee: string | null;
  snoozed_until: string | null;
  resolved_at: string | null;
  labels: string[];
  sla_due_at: string | null;
  sla_stage: "none" | "alerted" | "escalated";
}

const LABEL = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const HOUR_S = 3600;

/** The next 9:00 in this browser's time zone after today. */
function tomorrowNine(now = new Date()): Date {
  const d = new Date(now);
  d.setDate(d.getDate() + 1);
  d.setHours(9, 0, 0, 0);
  return d;
}

/** `d` as a datetime-local input's value (local time, to the second). */
function localValue(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export class InboxPanel {
  readonly el = h("section", { class: "inbox-state", "aria-labelledby": "inbox-state-title" });
  state: InboxState | null = null;
  private route = "";
  private threadId = "";
  private readonly err = errorBox();
  /** Who held the thread when this console's claim was refused (shown with "Claim anyway"). */
  private refusedBy: string | null = null;
  private shown = "";

  /** `changed` is told after an action changed the state (the inbox list reads itself again). */
  constructor(private readonly changed: () => void) {}

  /** Reads the thread's inbox state (quietly keeps what is shown when nothing changed). */
  async load(route: string, threadId: string): Promise<void> {
    if (route !== this.route || threadId !== this.threadId) {
      this.route = route;
      this.threadId = threadId;
      this.state = null;
      this.refusedBy = null;
      this.shown = "";
      this.err.clear();
    }
    if (!can(DOORS.inboxState)) {
      fill(this.el);
      return;
    }
    try {
      const got = await call<InboxState>("GET", path(DOORS.inboxState[1], { route_name: route }), { query: { thread_id: threadId } });
      if (route !== this.route || threadId !== this.threadId) return;
      this.state = got;
      if (got.assignee === null || got.assignee === currentMe()?.user_id) this.refusedBy = null;
      this.render();
    } catch (e) {
      // A thread with no record yet has no inbox state: nothing to show, nothing to act on.
      if (e instanceof ApiError && e.status === 404) {
        this.state = null;
        fill(this.el);
        this.shown = "";
        return;
      }
      this.err.show(e);
      if (!this.el.contains(this.err.el)) fill(this.el, this.err.el);
    }
  }

  /** Claims the thread for this console's operator (`force`: take it from its holder). */
  claim(force = false): Promise<void> {
    return this.act(DOORS.inboxClaim, { force: force || undefined }, force ? "You took the thread over." : "You claimed this thread.");
  }

  release(): Promise<void> {
    return this.act(DOORS.inboxRelease, {}, "You released this thread.");
  }

  resolve(): Promise<void> {
    return this.act(DOORS.inboxResolve, {}, "Thread resolved.");
  }

  reopen(): Promise<void> {
    return this.act(DOORS.inboxReopen, {}, "Thread reopened.");
  }

  snooze(until: { seconds: number } | { until: Date }): Promise<void> {
    const body = "seconds" in until ? { seconds: until.seconds } : { until: until.until.toISOString() };
    const at = "seconds" in until ? new Date(Date.now() + until.seconds * 1000) : until.until;
    return this.act(DOORS.inboxSnooze, body, `Snoozed until ${at.toLocaleString()}.`);
  }

  /** Opens the snooze choices and puts the focus on the first (the `s` key). */
  openSnooze(): void {
    const d = this.el.querySelector<HTMLDetailsElement>("details.snooze");
    if (!d) return;
    d.open = true;
    focus(d.querySelector<HTMLButtonElement>("button"));
  }

  private async act(door: readonly [string, string], body: Record<string, unknown>, done: string): Promise<void> {
    if (!can(door) || !this.state) return;
    const route = this.route;
    const threadId = this.threadId;
    await busy(null, this.err, async () => {
      try {
        this.state = await call<InboxState>("POST", path(door[1], { route_name: route }), { body: { thread_id: threadId, ...body } });
        this.refusedBy = null;
        announce(done);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409 && e.code === "thread_claimed") {
          // The refusal names no one (the assignee is stored input): the state read again does.
          await this.load(route, threadId);
          this.refusedBy = this.state?.assignee ?? "another operator";
          announce(`${this.refusedBy} holds this thread.`);
          this.render();
          return;
        }
        throw e;
      }
      if (route !== this.route || threadId !== this.threadId) return;
      this.render();
      this.changed();
    });
  }

  private render(): void {
    const s = this.state;
    if (!s) return;
    const me = currentMe()?.user_id ?? null;
    const signature = JSON.stringify([s, this.refusedBy, me]);
    if (signature === this.shown && this.el.firstChild) {
      tickClocks();
      return;
    }
    this.shown = signature;
    const snoozeWasOpen = this.el.querySelector<HTMLDetailsElement>("details.snooze")?.open ?? false;
    const button = (label: string, run: () => Promise<void>, cls?: string) => {
      const b = h("button", { type: "button", class: cls ?? null }, label);
      b.addEventListener("click", () => void run().then(() => focus(this.el.querySelector<HTMLElement>("#inbox-state-title"))));
      return b;
    };
    const controls: Child[] = [];
    if (can(DOORS.inboxClaim) && s.assignee !== me) controls.push(button("Claim", () => this.claim(), "primary"));
    if (can(DOORS.inboxRelease) && s.assignee !== null && s.assignee === me) controls.push(button("Release", () => this.release()));
    if (can(DOORS.inboxResolve) && s.status !== "resolved") controls.push(button("Resolve", () => this.resolve()));
    if (can(DOORS.inboxReopen) && (s.status === "resolved" || s.status === "snoozed")) controls.push(button("Reopen", () => this.reopen()));
    if (can(DOORS.inboxSnooze) && s.status !== "resolved") controls.push(this.snoozeChoices(snoozeWasOpen));

    const waiting: Child[] = [];
    if (s.waiting_since) {
      const due = s.sla_due_at && s.sla_stage === "none" ? Date.parse(s.sla_due_at) : null;
      waiting.push(" · Waiting since ", when(s.waiting_since), " ", waitingClock(s.waiting_since, due, s.sla_stage !== "none"));
    }
    fill(
      this.el,
      h("h3", { id: "inbox-state-title" }, "Inbox"),
      h(
        "p",
        { class: "inbox-line" },
        "Status: ",
        statusChip(s.status),
        " · ",
        s.assignee ? ["Assigned to ", h("strong", { class: "assignee" }, s.assignee === me ? `${s.assignee} (you)` : s.assignee)] : "Unassigned",
        waiting,
        s.status === "snoozed" && s.snoozed_until ? [" · Snoozed until ", when(s.snoozed_until)] : null,
      ),
      this.refusedBy
        ? h(
            "p",
            { class: "claimed", role: "alert" },
            h("strong", null, this.refusedBy),
            " holds this thread. ",
            can(DOORS.inboxClaim) ? button("Claim anyway", () => this.claim(true), "danger") : null,
          )
        : null,
      this.labelsBox(s),
      controls.length ? h("div", { class: "actions" }, controls) : null,
      this.err.el,
    );
    tickClocks();
  }

  private snoozeChoices(open: boolean): HTMLElement {
    const custom = h("input", { type: "datetime-local", name: "snooze-until", step: 1, value: localValue(new Date(Date.now() + HOUR_S * 1000)) });
    const choice = (label: string, run: () => Promise<void>) => {
      const b = h("button", { type: "button" }, label);
      b.addEventListener("click", () => void run());
      return b;
    };
    const form = h(
      "form",
      { class: "inline", "aria-label": "Snooze until a time" },
      field("Snooze until", custom),
      h("button", { type: "submit" }, "Snooze until"),
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const at = new Date(custom.value);
      if (Number.isNaN(at.getTime())) {
        this.err.show(new Error("Pick a time to snooze until."));
        return;
      }
      void this.snooze({ until: at });
    });
    return h(
      "details",
      { class: "snooze", open },
      h("summary", null, "Snooze"),
      h(
        "div",
        { class: "snooze-choices" },
        choice("1 hour", () => this.snooze({ seconds: HOUR_S })),
        choice("Tomorrow 9:00", () => this.snooze({ until: tomorrowNine() })),
        form,
      ),
    );
  }

  private labelsBox(s: InboxState): HTMLElement {
    const editable = can(DOORS.inboxLabels);
    const chips = s.labels.map((l) => {
      const remove = editable ? h("button", { type: "button", class: "chip-x", "aria-label": `Remove label ${l}` }, "×") : null;
      remove?.addEventListener("click", () => void this.act(DOORS.inboxLabels, { remove: [l] }, `Label ${l} removed.`));
      return h("li", { class: "label" }, h("span", { class: "chip" }, l), remove);
    });
    const input = h("input", { type: "text", name: "label", autocomplete: "off", pattern: LABEL.source, maxlength: 32, placeholder: "e.g. billing" });
    const form = editable
      ? h("form", { class: "inline", "aria-label": "Add a label" }, field("Add label", input), h("button", { type: "submit" }, "Add"))
      : null;
    form?.addEventListener("submit", (e) => {
      e.preventDefault();
      const l = input.value.trim().toLowerCase();
      if (!LABEL.test(l)) {
        this.err.show(new Error("A label is 1 to 32 of a-z, 0-9, _ and -, starting with a letter or digit."));
        return;
      }
      void this.act(DOORS.inboxLabels, { add: [l] }, `Label ${l} added.`).then(() => focus(this.el.querySelector<HTMLInputElement>("input[name=label]")));
    });
    return h(
      "div",
      { class: "labels" },
      h("span", null, "Labels: "),
      chips.length ? h("ul", { class: "label-list", "aria-label": "Labels" }, chips) : h("span", { class: "muted" }, "none"),
      form,
    );
  }
}
