/**
 * Conversations: the routes, a route's threads (newest activity first, filters by status and
 * address, message search) and one thread (src/views/thread.ts), side by side on a desktop and
 * one at a time on a phone. The selected route is watched live (src/live.ts): a notice moves its
 * thread to the top at once and re-reads the listing shortly after (the listing trails the threads
 * by about a second), and re-reads the open thread's transcript.
 */
import { call, path } from "../api";
import { DOORS } from "../doors";
import { type Child, field, fill, focus, h, select } from "../dom";
import { type LiveState, type Notice, type Watch, watchRoute } from "../live";
import { can } from "../session";
import { announce, busy, errorBox, loading, statusChip, threadHref, when } from "../ui";
import type { RouteView } from "../types";
import { ThreadPane } from "./thread";
import { hoursPanel } from "./hours";

interface ThreadRow {
  thread_id: string;
  client_address: string | null;
  last_activity_at: string;
  message_count: number | null;
  last_status: string;
  /** Shown from a live notice before the listing caught up. */
  fresh?: boolean;
}

interface Page<T> {
  items: T[];
  total: number;
  page: number;
  next_page: number | null;
  truncated?: boolean;
}

const STATUSES = ["accepted", "pending_delivery", "provisional", "delivered", "failed", "shed", "silent"];
/** How long after a notice the listing is read again (it trails the threads by about a second). */
const RELIST_MS = 1500;

export class ConversationsView {
  readonly el: HTMLElement;
  private readonly routesPane = h("section", { class: "pane routes", "aria-labelledby": "routes-title" });
  private readonly threadsPane = h("section", { class: "pane threads", "aria-labelledby": "threads-title" });
  private readonly threadPane: ThreadPane;
  private routes: RouteView[] = [];
  private routesLoaded = false;
  /** undefined until the first `show`, so the first one always opens its route (or the hint). */
  private route: string | null | undefined = undefined;
  private threadId: string | null = null;
  private live: Watch | null = null;
  private rows: ThreadRow[] = [];
  private filters = { status: "", address: "" };
  private nextPage: number | null = null;
  private list = h("ol", { class: "thread-list", "aria-label": "Threads" });
  private liveBadge = h("span", { class: "live-state", "aria-live": "polite" });
  private relist: number | undefined;
  private searching = false;

  constructor() {
    this.threadPane = new ThreadPane({
      // A forgotten thread: back to its route's list.
      onForgotten: (route) => {
        location.hash = `#/conversations/${encodeURIComponent(route)}`;
      },
      back: (route) => ({ href: `#/conversations/${encodeURIComponent(route)}`, label: "Threads" }),
    });
    this.el = h("div", { class: "conversations", "data-depth": "routes" }, this.routesPane, this.threadsPane, this.threadPane.el);
    void this.loadRoutes();
  }

  /** Shows `route` and `threadId` (from the address bar). */
  show(route: string | null, threadId: string | null): void {
    this.el.dataset.depth = threadId ? "thread" : route ? "threads" : "routes";
    if (route !== this.route) {
      this.route = route;
      this.markRoute();
      this.openRoute();
      // A route made since the list was read: read the list again.
      if (route && this.routesLoaded && !this.routeOf(route)) void this.loadRoutes();
    }
    if (threadId !== this.threadId || route === null) {
      this.threadId = threadId;
      if (route && threadId) void this.threadPane.open(this.routeOf(route), route, threadId);
      else this.threadPane.close();
      this.markThread();
    }
  }

  dispose(): void {
    this.live?.stop();
    this.live = null;
    this.threadPane.close();
    clearTimeout(this.relist);
  }

  private routeOf(name: string): RouteView | null {
    return this.routes.find((r) => r.route_name === name) ?? null;
  }

  // ───────────── routes ─────────────

  private async loadRoutes(): Promise<void> {
    const err = errorBox();
    const title = h("h2", { id: "routes-title" }, "Routes");
    if (!can(DOORS.routes)) {
      fill(this.routesPane, title, h("p", { class: "muted" }, "This key may not list routes (GET /api/conversations)."));
      return;
    }
    fill(this.routesPane, title, loading("routes"));
    try {
      const got = await call<{ items: RouteView[] }>("GET", DOORS.routes[1]);
      this.routes = got.items;
      this.routesLoaded = true;
    } catch (e) {
      err.show(e);
      fill(this.routesPane, title, err.el);
      return;
    }
    const items = this.routes.map((r) =>
      h(
        "li",
        null,
        h(
          "a",
          { href: `#/conversations/${encodeURIComponent(r.route_name)}`, "data-route": r.route_name },
          h("span", { class: "name" }, r.route_name),
          h("small", null, r.door === "channel" ? `${r.channel} channel` : "api door", ` · ${r.target_kind} ${r.target_name}`),
        ),
      ),
    );
    fill(this.routesPane, title, items.length ? h("ul", { class: "route-list" }, items) : h("p", { class: "muted" }, "No routes yet."));
    this.markRoute();
  }

  private markRoute(): void {
    for (const a of this.routesPane.querySelectorAll<HTMLAnchorElement>("a[data-route]")) {
      if (a.dataset.route === this.route) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }

  private markThread(): void {
    for (const a of this.list.querySelectorAll<HTMLAnchorElement>("a[data-thread]")) {
      if (a.dataset.thread === this.threadId) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }

  // ───────────── threads of a route ─────────────

  private openRoute(): void {
    this.live?.stop();
    this.live = null;
    this.rows = [];
    this.filters = { status: "", address: "" };
    this.searching = false;
    const route = this.route;
    if (!route) {
      fill(this.threadsPane, h("h2", { id: "threads-title" }, "Threads"), h("p", { class: "muted" }, "Pick a route."));
      return;
    }
    this.renderThreadsPane(route);
    if (can(DOORS.liveTicket)) {
      this.live = watchRoute(route, {
        notices: (n) => this.onNotices(route, n),
        state: (s) => this.onLiveState(s),
      });
    } else this.liveBadge.textContent = "Live updates: not allowed for this key";
  }

  private renderThreadsPane(route: string): void {
    const back = h("a", { href: "#/conversations", class: "back" }, "← Routes");
    const title = h("h2", { id: "threads-title" }, "Threads of ", h("span", { class: "name" }, route));
    const hours = hoursPanel(route);
    const openById = this.openByIdForm(route);
    if (!can(DOORS.threads)) {
      fill(
        this.threadsPane,
        back,
        title,
        this.liveBadge,
        hours,
        h("p", { class: "muted" }, "This key may not list threads (an admin door). Open a thread by its id:"),
        openById,
      );
      return;
    }
    const status = select("status", [["", "any status"], ...STATUSES.map((s): [string, string] => [s, s.replace(/_/g, " ")])], this.filters.status);
    const address = h("input", { type: "search", name: "address", autocomplete: "off", value: this.filters.address });
    const filterErr = errorBox();
    const filter = h(
      "form",
      { class: "filters", "aria-label": "Filter threads" },
      field("Status", status),
      field("Address contains", address),
      h("button", { type: "submit" }, "Filter"),
    );
    filter.addEventListener("submit", (e) => {
      e.preventDefault();
      this.filters = { status: status.value, address: address.value.trim() };
      this.searching = false;
      void busy(filter.querySelector("button"), filterErr, () => this.loadThreads(route, 1));
    });
    const search = this.searchForm(route);
    fill(this.threadsPane, back, title, this.liveBadge, hours, filter, filterErr.el, can(DOORS.search) ? search : null, this.list, openById);
    void this.loadThreads(route, 1).catch((e) => filterErr.show(e));
  }

  private async loadThreads(route: string, page: number): Promise<void> {
    if (page === 1) fill(this.list, h("li", { class: "muted" }, "Loading threads…"));
    const got = await call<Page<ThreadRow>>("GET", path(DOORS.threads[1], { route_name: route }), {
      query: { page, pageSize: 25, status: this.filters.status, address: this.filters.address },
    });
    if (route !== this.route) return;
    this.rows = page === 1 ? got.items : [...this.rows, ...got.items.filter((r) => !this.rows.some((x) => x.thread_id === r.thread_id))];
    this.nextPage = got.next_page;
    this.renderRows(route, got.truncated ? "The filter scanned the 500 newest threads only." : null);
  }

  private renderRows(route: string, note: string | null = null): void {
    const items: Child[] = this.rows.map((r) =>
      h(
        "li",
        { class: r.fresh ? "fresh" : null },
        h(
          "a",
          { href: threadHref(route, r.thread_id), "data-thread": r.thread_id },
          h("span", { class: "name" }, r.client_address ?? r.thread_id),
          h(
            "span",
            { class: "meta" },
            statusChip(r.last_status),
            r.message_count !== null ? ` ${r.message_count} msg · ` : " new · ",
            when(r.last_activity_at),
          ),
        ),
      ),
    );
    if (!items.length) items.push(h("li", { class: "muted" }, this.filters.status || this.filters.address ? "No thread matches." : "No threads yet."));
    if (note) items.push(h("li", { class: "muted" }, note));
    if (this.nextPage) {
      const more = h("button", { type: "button" }, "More threads");
      const err = errorBox();
      more.addEventListener("click", () => void busy(more, err, () => this.loadThreads(route, this.nextPage ?? 1)));
      items.push(h("li", null, more, err.el));
    }
    fill(this.list, items);
    this.markThread();
  }

  private searchForm(route: string): HTMLElement {
    const q = h("input", { type: "search", name: "q", autocomplete: "off", required: true });
    const err = errorBox();
    const form = h(
      "form",
      { class: "filters", role: "search", "aria-label": "Search messages" },
      field("Search messages", q),
      h("button", { type: "submit" }, "Search"),
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      void busy(form.querySelector("button"), err, async () => {
        const got = await call<
          Page<{ thread_id: string; message_id: string; inbound_text: string; answer: string | null; status: string; created_at: string }>
        >("GET", path(DOORS.search[1], { route_name: route }), {
          query: { q: q.value, pageSize: 50 },
        });
        this.searching = true;
        const clear = h("button", { type: "button" }, "Back to threads");
        clear.addEventListener("click", () => {
          this.searching = false;
          q.value = "";
          void this.loadThreads(route, 1).catch((x) => err.show(x));
        });
        fill(
          this.list,
          h("li", { class: "muted" }, `${got.total} matching message${got.total === 1 ? "" : "s"}${got.truncated ? " (search budget spent: narrow it)" : ""}`),
          got.items.map((r) =>
            h(
              "li",
              null,
              h(
                "a",
                { href: threadHref(route, r.thread_id), "data-thread": r.thread_id },
                h("span", { class: "name" }, r.inbound_text || r.answer || r.message_id),
                h("span", { class: "meta" }, statusChip(r.status), " ", r.thread_id, " · ", when(r.created_at)),
              ),
            ),
          ),
          h("li", null, clear),
        );
      });
    });
    return h("div", null, form, err.el);
  }

  private openByIdForm(route: string): HTMLElement {
    const id = h("input", { type: "text", name: "thread_id", autocomplete: "off", required: true, placeholder: `bridge:${route}:…` });
    const form = h("form", { class: "filters", "aria-label": "Open a thread by id" }, field("Thread id", id), h("button", { type: "submit" }, "Open thread"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      location.hash = threadHref(route, id.value.trim());
    });
    return form;
  }

  // ───────────── live ─────────────

  private onLiveState(s: LiveState): void {
    this.liveBadge.textContent = s.state === "live" ? "● Live" : s.state === "connecting" ? "Connecting live updates…" : (s.message ?? "Live updates are off");
    this.liveBadge.dataset.state = s.state;
  }

  private onNotices(route: string, notices: Notice[]): void {
    if (route !== this.route) return;
    let listChanged = false;
    for (const n of notices) {
      // The open thread reads itself again (it watches the route too).
      if (n.route_name !== route) continue;
      if (n.type !== "thread" || this.searching || !can(DOORS.threads)) continue;
      if (this.filters.status && n.status !== this.filters.status) continue;
      const i = this.rows.findIndex((r) => r.thread_id === n.thread_id);
      const row: ThreadRow =
        i >= 0
          ? { ...this.rows[i], last_status: n.status, last_activity_at: n.at }
          : { thread_id: n.thread_id, client_address: null, last_activity_at: n.at, message_count: null, last_status: n.status, fresh: true };
      if (i >= 0) this.rows.splice(i, 1);
      else if (this.filters.address && !n.thread_id.includes(this.filters.address)) continue;
      this.rows.unshift(row);
      listChanged = true;
      if (i < 0) announce(`New conversation activity on ${route}`);
    }
    if (!listChanged) return;
    this.renderRows(route);
    clearTimeout(this.relist);
    this.relist = window.setTimeout(() => {
      if (route === this.route && !this.searching) void this.loadThreads(route, 1).catch(() => undefined);
    }, RELIST_MS);
  }
}

/** Moves focus to the view's heading after a navigation. */
export function focusTitle(root: HTMLElement, depth: string): void {
  const id = depth === "thread" ? "thread-title" : depth === "threads" ? "threads-title" : "routes-title";
  focus(root.querySelector<HTMLElement>(`#${id}`));
}
