/**
 * The inbox (docs/inbox.md "The console's inbox"): every route's threads in one list
 * (`GET /api/inbox/threads`), in the views a support team works from (Waiting, longest wait
 * first, with a live clock that turns overdue past the thread's `sla_due_at`; Mine; Unassigned;
 * All; Resolved; Rated down, the review queue of threads with an answer their customer rated
 * down, src/views/feedback.ts), filtered by route, channel, label and status, beside the open thread
 * (src/views/thread.ts). Keyboard: j/n and k move through the list, c claims, e or r resolves,
 * s snoozes, / starts a canned response, ? shows the keys.
 *
 * Live: the hub announces per route, so the list watches the socket of every route it may show (up
 * to MAX_LIVE_ROUTES) and reads itself again shortly after a notice (the listing trails the threads
 * by about a second). When it cannot cover them all live (more routes, a key without live tickets,
 * a socket down), it reads itself every POLL_MS instead.
 */
import { call, path } from "../api";
import { DOORS } from "../doors";
import { type Child, field, fill, focus, h, select } from "../dom";
import { type Watch, watchRoute } from "../live";
import { can, currentMe } from "../session";
import type { InboxItem, RouteView } from "../types";
import { busy, errorBox, inboxHref, setClockDue, statusChip, tickClocks, waitingClock } from "../ui";
import type { InboxState } from "./inbox-panel";
import { WaitingNotifier } from "./notify";
import { ThreadPane } from "./thread";
import { ratedDownChip } from "./feedback";

interface Page<T> {
  items: T[];
  total: number;
  next_page: number | null;
  truncated?: boolean;
}

const VIEWS = [
  ["waiting", "Waiting"],
  ["mine", "Mine"],
  ["unassigned", "Unassigned"],
  ["all", "All"],
  ["resolved", "Resolved"],
  ["rated_down", "Rated down"],
] as const;
type View = (typeof VIEWS)[number][0];

const STATUSES = ["pending", "open", "snoozed", "resolved"];
const PAGE_SIZE = 50;
/** How long after a notice the list is read again (the listing trails the threads by about a second). */
const RELIST_MS = 1500;
/** How often the list reads itself when live updates do not cover every route it shows. */
const POLL_MS = 5000;
/** The most routes the list watches live; past it, it polls. */
const MAX_LIVE_ROUTES = 8;
/** The most waiting threads whose alert time (`sla_due_at`) is read per refresh. */
const SLA_READS = 25;

const KEYS: Array<[string, string]> = [
  ["j or n", "next thread in the list"],
  ["k", "previous thread"],
  ["c", "claim the open thread"],
  ["e or r", "resolve it"],
  ["s", "snooze it (then pick when)"],
  ["/", "a canned response in the reply box"],
  ["?", "show or hide these keys"],
];

export class InboxView {
  readonly el: HTMLElement;
  private readonly listPane = h("section", { class: "pane inbox-list", "aria-labelledby": "inbox-title" });
  private readonly threadPane: ThreadPane;
  private view: View = "waiting";
  private filters = { route: "", channel: "", label: "", status: "" };
  private rows: InboxItem[] = [];
  private total = 0;
  private nextPage: number | null = null;
  private routes: RouteView[] | null = null;
  private readonly watches = new Map<string, Watch>();
  private route: string | null = null;
  private threadId: string | null = null;
  private relist: number | undefined;
  private relistAt = 0;
  private poll: number | undefined;
  private reads = 0;
  private disposed = false;
  /** thread id + waiting_since → when its alert is due (null: none) and whether it already went. */
  private readonly sla = new Map<string, { due: number | null; late: boolean }>();
  private readonly list = h("ol", { class: "thread-list inbox-rows", "aria-label": "Inbox threads" });
  private readonly count = h("p", { class: "muted count", "aria-live": "polite" });
  private readonly liveNote = h("span", { class: "live-state" });
  private readonly viewButtons = new Map<View, HTMLButtonElement>();
  private readonly err = errorBox();
  private readonly keys = h("details", { class: "keys" }, h("summary", null, "Keyboard shortcuts"));
  private readonly notifier: WaitingNotifier;

  constructor() {
    this.threadPane = new ThreadPane({
      onForgotten: () => {
        location.hash = "#/inbox";
      },
      back: () => ({ href: "#/inbox", label: "Inbox" }),
      onInboxChanged: () => this.relistSoon(300),
    });
    this.notifier = new WaitingNotifier(() => this.waitingNow());
    this.el = h("div", { class: "inbox", "data-depth": "list" }, this.listPane, this.threadPane.el);
    this.renderListPane();
    void this.start();
  }

  /** Shows the thread `threadId` of `route` beside the list (from the address bar). */
  show(route: string | null, threadId: string | null): void {
    this.el.dataset.depth = threadId ? "thread" : "list";
    if (route === this.route && threadId === this.threadId) return;
    this.route = route;
    this.threadId = threadId;
    if (route && threadId) void this.threadPane.open(this.routes?.find((r) => r.route_name === route) ?? null, route, threadId);
    else this.threadPane.close();
    this.markCurrent();
  }

  dispose(): void {
    this.disposed = true;
    for (const w of this.watches.values()) w.stop();
    this.watches.clear();
    clearTimeout(this.relist);
    clearInterval(this.poll);
    this.threadPane.close();
    this.notifier.dispose();
  }

  /** The inbox's keys; true when `e` was one (the caller then prevents its default). */
  onKey(e: KeyboardEvent): boolean {
    if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return false;
    const t = e.target as HTMLElement | null;
    if (t && (/^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) || t.isContentEditable)) return false;
    switch (e.key) {
      case "j":
      case "n":
        return this.step(1);
      case "k":
        return this.step(-1);
      case "c":
        this.threadPane.claim();
        return this.threadPane.current() !== null;
      case "e":
      case "r":
        this.threadPane.resolve();
        return this.threadPane.current() !== null;
      case "s":
        this.threadPane.snooze();
        return this.threadPane.current() !== null;
      case "/":
        return this.threadPane.startReply(true);
      case "?":
        this.keys.open = !this.keys.open;
        if (this.keys.open) focus(this.keys.querySelector("summary"));
        return true;
      default:
        return false;
    }
  }

  /** Opens the next (or previous) thread of the list. */
  private step(by: 1 | -1): boolean {
    if (!this.rows.length) return false;
    const i = this.rows.findIndex((r) => r.route_name === this.route && r.thread_id === this.threadId);
    const next = this.rows[i < 0 ? (by > 0 ? 0 : this.rows.length - 1) : Math.min(this.rows.length - 1, Math.max(0, i + by))];
    location.hash = inboxHref(next.route_name, next.thread_id);
    return true;
  }

  // ───────────── the list ─────────────

  private async start(): Promise<void> {
    if (can(DOORS.routes)) {
      try {
        this.routes = (await call<{ items: RouteView[] }>("GET", DOORS.routes[1])).items;
      } catch {
        // Without the routes the list still works; it polls instead of watching.
        this.routes = null;
      }
    }
    if (this.disposed) return;
    this.renderListPane();
    this.rewatch();
    this.poll = window.setInterval(() => {
      if (!this.liveCovers()) void this.load(1).catch(() => undefined);
    }, POLL_MS);
    await this.load(1).catch((e) => this.err.show(e));
  }

  private renderListPane(): void {
    const views = h(
      "div",
      { class: "views", role: "group", "aria-label": "Inbox views" },
      VIEWS.map(([v, label]) => {
        const b = h("button", { type: "button", "aria-pressed": v === this.view ? "true" : "false", "data-view": v }, label);
        b.addEventListener("click", () => {
          this.view = v;
          for (const [k, btn] of this.viewButtons) btn.setAttribute("aria-pressed", k === v ? "true" : "false");
          void busy(null, this.err, () => this.load(1));
        });
        this.viewButtons.set(v, b);
        return b;
      }),
    );
    const routeNames = (this.routes ?? []).map((r) => r.route_name).sort();
    const channels = [...new Set((this.routes ?? []).map((r) => r.channel).filter((c): c is string => !!c))].sort();
    const route = select("route", [["", "every route"], ...routeNames.map((r): [string, string] => [r, r])], this.filters.route);
    const channel = select("channel", [["", "every channel"], ...channels.map((c): [string, string] => [c, c])], this.filters.channel);
    const label = h("input", { type: "text", name: "label", autocomplete: "off", value: this.filters.label, maxlength: 32 });
    const status = select("status", [["", "any status"], ...STATUSES.map((s): [string, string] => [s, s])], this.filters.status);
    const filter = h(
      "form",
      { class: "filters", "aria-label": "Filter the inbox" },
      this.routes ? field("Route", route) : null,
      channels.length ? field("Channel", channel) : null,
      field("Label", label),
      field("Status", status),
      h("button", { type: "submit" }, "Filter"),
    );
    filter.addEventListener("submit", (e) => {
      e.preventDefault();
      const routeChanged = route.value !== this.filters.route;
      this.filters = {
        route: this.routes ? route.value : "",
        channel: channels.length ? channel.value : "",
        label: label.value.trim().toLowerCase(),
        status: status.value,
      };
      if (routeChanged) this.rewatch();
      void busy(filter.querySelector("button"), this.err, () => this.load(1));
    });
    fill(
      this.keys,
      h("summary", null, "Keyboard shortcuts"),
      h(
        "dl",
        null,
        KEYS.map(([k, what]) => [h("dt", null, h("kbd", null, k)), h("dd", null, what)]),
      ),
    );
    fill(
      this.listPane,
      h("div", { class: "inbox-head" }, h("h2", { id: "inbox-title" }, "Inbox"), this.liveNote),
      views,
      filter,
      this.notifier.el,
      this.err.el,
      this.count,
      this.list,
      this.keys,
    );
  }

  private query(page: number): Record<string, string | number> {
    const q: Record<string, string | number> = { view: this.view, page, pageSize: PAGE_SIZE };
    for (const [k, v] of Object.entries(this.filters)) if (v) q[k] = v;
    return q;
  }

  private async load(page: number): Promise<void> {
    const n = ++this.reads;
    if (page === 1 && !this.rows.length) fill(this.list, h("li", { class: "muted" }, "Loading the inbox…"));
    const got = await call<Page<InboxItem>>("GET", DOORS.inbox[1], { query: this.query(page) });
    if (n !== this.reads || this.disposed) return;
    this.rows = page === 1 ? got.items : [...this.rows, ...got.items.filter((r) => !this.rows.some((x) => x.thread_id === r.thread_id))];
    this.total = got.total;
    this.nextPage = got.next_page;
    this.err.clear();
    this.renderRows(got.truncated === true);
    if (this.view === "waiting") void this.readSla();
    void this.notifier.check(this.view === "waiting" && !Object.values(this.filters).some(Boolean) ? this.rows : null);
  }

  /** The threads waiting now, for the notifier (the list's own when it shows exactly those). */
  private async waitingNow(): Promise<InboxItem[]> {
    return (await call<Page<InboxItem>>("GET", DOORS.inbox[1], { query: { view: "waiting", pageSize: PAGE_SIZE } })).items;
  }

  private renderRows(truncated: boolean): void {
    const me = currentMe()?.user_id;
    const label = VIEWS.find(([v]) => v === this.view)?.[1] ?? this.view;
    this.count.textContent = `${label}: ${this.total} thread${this.total === 1 ? "" : "s"}${truncated ? " (the newest 500 scanned)" : ""}`;
    const items: Child[] = this.rows.map((r) => {
      const cached = r.waiting_since ? this.sla.get(slaKey(r)) : undefined;
      return h(
        "li",
        { "data-thread": r.thread_id, "data-route": r.route_name, "data-status": r.inbox_status },
        h(
          "a",
          { href: inboxHref(r.route_name, r.thread_id), "data-thread": r.thread_id },
          h(
            "span",
            { class: "row-top" },
            h("span", { class: "name" }, r.client_address ?? r.thread_id),
            r.waiting_since ? waitingClock(r.waiting_since, cached?.due ?? null, cached?.late ?? false) : null,
          ),
          h(
            "span",
            { class: "meta" },
            h("span", { class: "route" }, r.route_name),
            r.channel ? ` (${r.channel})` : "",
            " · ",
            statusChip(r.inbox_status),
            " · ",
            r.assignee ? h("span", { class: "assignee" }, r.assignee === me ? `${r.assignee} (you)` : r.assignee) : h("span", { class: "muted" }, "unassigned"),
            r.labels.length ? [" · ", r.labels.map((l) => [h("span", { class: "chip label" }, l), " "])] : null,
            r.rated_down ? [" · ", ratedDownChip(r.rated_down)] : null,
          ),
        ),
      );
    });
    if (!items.length)
      items.push(
        h(
          "li",
          { class: "muted" },
          this.view === "waiting" ? "Nobody is waiting." : this.view === "rated_down" ? "No answer was rated down." : "No thread here.",
        ),
      );
    if (this.nextPage) {
      const more = h("button", { type: "button" }, "More threads");
      more.addEventListener("click", () => void busy(more, this.err, () => this.load(this.nextPage ?? 1)));
      items.push(h("li", null, more));
    }
    // A live refresh keeps the focus on the row it was on.
    const focused = this.list.contains(document.activeElement) ? (document.activeElement as HTMLElement).getAttribute("href") : null;
    fill(this.list, items);
    if (focused) this.list.querySelector<HTMLElement>(`a[href="${CSS.escape(focused)}"]`)?.focus();
    this.markCurrent();
    tickClocks();
  }

  private markCurrent(): void {
    for (const a of this.list.querySelectorAll<HTMLAnchorElement>("a[data-thread]")) {
      const li = a.parentElement as HTMLElement;
      if (li.dataset.route === this.route && a.dataset.thread === this.threadId) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }

  /**
   * The listing carries `waiting_since` but not when the alert is due: that is the thread's own
   * (`GET …/thread/inbox`). It is read once per wait and kept, so the clocks turn overdue on time.
   */
  private async readSla(): Promise<void> {
    if (!can(DOORS.inboxState)) return;
    const missing = this.rows.filter((r) => r.waiting_since && !this.sla.has(slaKey(r))).slice(0, SLA_READS);
    for (const r of missing) {
      try {
        const s = await call<InboxState>("GET", path(DOORS.inboxState[1], { route_name: r.route_name }), { query: { thread_id: r.thread_id } });
        const due = s.sla_due_at && s.sla_stage === "none" ? Date.parse(s.sla_due_at) : null;
        this.sla.set(slaKey(r), { due, late: s.sla_stage !== "none" });
        const li = [...this.list.querySelectorAll<HTMLElement>("li[data-thread]")].find(
          (x) => x.dataset.thread === r.thread_id && x.dataset.route === r.route_name,
        );
        const clock = li?.querySelector<HTMLElement>(".clock");
        if (clock) setClockDue(clock, due, s.sla_stage !== "none");
      } catch {
        // No alert time for this one: its clock just counts.
        this.sla.set(slaKey(r), { due: null, late: false });
      }
    }
  }

  // ───────────── live ─────────────

  /** The routes the list may show now. */
  private scope(): string[] | null {
    if (this.filters.route) return [this.filters.route];
    return this.routes ? this.routes.map((r) => r.route_name) : null;
  }

  /** Watches the routes in scope (or none, when there are too many: the list polls then). */
  private rewatch(): void {
    const scope = this.scope();
    const wanted = new Set(can(DOORS.liveTicket) && scope && scope.length <= MAX_LIVE_ROUTES ? scope : []);
    for (const [route, w] of this.watches) {
      if (wanted.has(route)) continue;
      w.stop();
      this.watches.delete(route);
    }
    for (const route of wanted) {
      if (this.watches.has(route)) continue;
      this.watches.set(
        route,
        watchRoute(route, {
          notices: (notices) => {
            if (notices.some((n) => n.type === "thread")) this.relistSoon(RELIST_MS);
          },
          state: () => this.paintLive(),
        }),
      );
    }
    this.paintLive();
  }

  private liveCovers(): boolean {
    const scope = this.scope();
    return !!scope && scope.every((r) => this.watches.get(r)?.current().state === "live");
  }

  private paintLive(): void {
    const scope = this.scope();
    const covered = this.liveCovers();
    this.liveNote.dataset.state = covered ? "live" : "offline";
    this.liveNote.textContent = covered
      ? `● Live (${scope?.length ?? 0} route${scope?.length === 1 ? "" : "s"})`
      : !can(DOORS.liveTicket) || !scope || scope.length > MAX_LIVE_ROUTES
        ? `Refreshing every ${POLL_MS / 1000} s`
        : `Connecting live updates… (refreshing every ${POLL_MS / 1000} s meanwhile)`;
  }

  /**
   * Reads the list again in `ms`, or sooner when a read is already due: a steady stream of notices
   * then reads the list every RELIST_MS, never pushing the read back for ever.
   */
  private relistSoon(ms: number): void {
    const at = Date.now() + ms;
    if (this.relist !== undefined && this.relistAt <= at) return;
    clearTimeout(this.relist);
    this.relistAt = at;
    this.relist = window.setTimeout(() => {
      this.relist = undefined;
      void this.load(1).catch(() => undefined);
    }, ms);
  }
}

function slaKey(r: InboxItem): string {
  return `${r.route_name}\u0000${r.thread_id}\u0000${r.waiting_since}`;
}
