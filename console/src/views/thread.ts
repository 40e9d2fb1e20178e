/**
 * One thread: its transcript (operator messages marked; each record's status and, for admins,
 * attempts, error and the whole record), the control mode with its source and the Take over /
 * Hand back buttons, its inbox state and controls (src/views/inbox-panel.ts), the other operators
 * viewing or typing in it, the reply box (`/` for canned responses; rich parts only where the
 * route's channel advertises them in `GET /api/channels`), the private notes (src/views/notes.ts),
 * Forget; on a person thread the person's addresses across channels, its locale and Erase person.
 * Every control is shown only when `me` says the key passes its door.
 *
 * The pane watches its route live: a notice about its thread reads it again, and it announces its
 * operator as viewing (repeated while open) and typing (docs/console.md "Presence").
 */
import { ApiError, call, download, messageOf, path } from "../api";
import { DOORS } from "../doors";
import { type Child, field, fill, focus, h, select } from "../dom";
import { type Watch, watchRoute } from "../live";
import { can, currentMe } from "../session";
import { announce, busy, errorBox, loading, statusChip, when } from "../ui";
import type { RouteView } from "../types";
import { cannedPicker } from "./canned";
import { InboxPanel } from "./inbox-panel";
import { LiveTurnPanel } from "./live-turn";
import { NotesPanel } from "./notes";
import { markdownText } from "../markdown";
import { type Feedback, ratingMark } from "./feedback";

interface Attachment {
  kind: string;
  url: string;
  caption?: string;
  filename?: string;
}

export interface RecordView {
  message_id: string;
  route_name: string;
  thread_id: string;
  door: string;
  channel: string | null;
  client_address: string | null;
  origin: "client" | "operator";
  inbound_kind: "message" | "event";
  inbound_text: string;
  inbound_attachments?: Attachment[];
  inbound_location?: { latitude: number; longitude: number; name?: string };
  inbound_event?: { id: string; kind: string };
  /** A web visitor's profile: pre-chat answers and the site's vouched claims (docs/channels.md, "Pre-chat form"). */
  inbound_profile?: Profile;
  status: string;
  answer_status: string | null;
  answer: string | null;
  answer_part?: Record<string, unknown>;
  /** The customer's rating of the answer (src/views/feedback.ts). */
  feedback?: Feedback;
  error?: string | null;
  attempts?: number;
  created_at: string;
  updated_at: string;
}

interface Mode {
  mode: "agent" | "manual";
  source: "thread" | "route";
}

interface Channel {
  name: string;
  capabilities: { media: boolean; location: boolean; template: boolean; interactive: boolean; form: boolean };
}

/** What a customer told about themselves; `verified` names the fields the site vouched for. */
interface Profile {
  fields: Record<string, string | number | boolean>;
  verified: string[];
}

interface Person {
  person_id: string;
  target_kind: string;
  target_name: string;
  locale: string | null;
  profile: Profile | null;
  addresses: Array<{ door: string; routes: string[]; channel: string | null; our_identity: string | null; address: string; linked_at: string }>;
}

const PERSON_PREFIX = "bridge:@person:";
const PAGE = 50;
/** How often an open thread repeats "viewing", and how seldom typing is announced (the hub holds them 30 s and 8 s). */
const VIEWING_EVERY_MS = 15_000;
const TYPING_EVERY_MS = 3_000;
/** After this long without a keystroke the operator is back to viewing. */
const TYPING_IDLE_MS = 5_000;

export interface ThreadPaneOptions {
  /** The thread was forgotten (or its person erased): leave it. */
  onForgotten: (route: string) => void;
  /** Where "←" leads from a thread of `route` (one pane at a time, on a phone), and what it says. */
  back: (route: string) => { href: string; label: string };
  /** The thread's inbox state changed by this console. */
  onInboxChanged?: () => void;
}

let channelsCache: Promise<Channel[]> | null = null;
function channels(): Promise<Channel[]> {
  channelsCache ??= call<{ channels: Channel[] }>("GET", DOORS.channels[1])
    .then((c) => c.channels)
    .catch(() => {
      channelsCache = null;
      return [];
    });
  return channelsCache;
}

export class ThreadPane {
  readonly el = h("section", { class: "pane thread", "aria-labelledby": "thread-title" });
  private route = "";
  private threadId = "";
  private routeView: RouteView | null = null;
  private refreshTimer: number | undefined;
  private readonly transcript = h("ol", { class: "transcript", "aria-label": "Transcript" });
  private readonly modeBox = h("div", { class: "mode" });
  private readonly transcriptErr = errorBox();
  private pagesShown = 1;
  private hasOlder = false;
  private readonly inbox: InboxPanel;
  private readonly notes = new NotesPanel();
  private readonly turn = new LiveTurnPanel(() => this.refreshSoon());
  private readonly presenceLine = h("p", { class: "presence", "aria-live": "polite" });
  private watch: Watch | null = null;
  /** The thread this pane announced itself on (its route's watch says "left" there when it goes). */
  private presentOn = "";
  private viewing: number | undefined;
  private typedAt = 0;
  private typingIdle: number | undefined;
  private readonly onForgotten: (route: string) => void;

  constructor(private readonly opts: ThreadPaneOptions) {
    this.onForgotten = opts.onForgotten;
    this.inbox = new InboxPanel(() => opts.onInboxChanged?.());
    this.close();
  }

  close(): void {
    this.leave();
    this.route = "";
    this.threadId = "";
    fill(this.el, h("h2", { id: "thread-title", class: "visually-hidden" }, "Thread"), h("p", { class: "muted" }, "Pick a thread to read its transcript."));
  }

  /** The open thread, or null. */
  current(): { route: string; threadId: string } | null {
    return this.route && this.threadId ? { route: this.route, threadId: this.threadId } : null;
  }

  /** The keyboard's inbox actions on the open thread. */
  claim(): void {
    if (this.current()) void this.inbox.claim();
  }

  resolve(): void {
    if (this.current()) void this.inbox.resolve();
  }

  snooze(): void {
    if (this.current()) this.inbox.openSnooze();
  }

  /** Puts the focus in the reply box, starting a canned response (`/`) when asked. */
  startReply(slash: boolean): boolean {
    const text = this.el.querySelector<HTMLTextAreaElement>("textarea[name=text]");
    if (!text) return false;
    text.focus();
    if (slash) {
      text.setRangeText("/", text.selectionStart, text.selectionEnd, "end");
      text.dispatchEvent(new Event("input"));
    }
    return true;
  }

  // ───────────── presence ─────────────

  /** Watches the thread's route: notices about this thread read it again; presence is shown. */
  private enter(route: string, threadId: string): void {
    this.leave();
    if (!can(DOORS.liveTicket)) return;
    this.watch = watchRoute(route, {
      notices: (notices) => {
        const mine = notices.filter((n) => n.route_name === route && n.thread_id === threadId);
        // A turn's notices move its live panel; the transcript changes with the thread's own notices.
        for (const n of mine) if (n.type === "turn") this.turn.notice(n.state);
        // A thread notice (a new inbound, say) also reads the turn, in case its own notice was lost.
        if (mine.some((n) => n.type !== "turn")) {
          this.refreshSoon();
          this.turn.catchUp();
        }
      },
      presence: () => this.paintPresence(),
      // Notices sent while the socket was down are lost: the turn is read again once it is back.
      state: (s) => {
        if (s.state === "live") this.turn.catchUp();
      },
    });
    this.presentOn = threadId;
    this.watch.announce(threadId, "viewing");
    this.viewing = window.setInterval(() => {
      if (Date.now() - this.typedAt > TYPING_IDLE_MS) this.watch?.announce(threadId, "viewing");
    }, VIEWING_EVERY_MS);
    this.paintPresence();
  }

  private leave(): void {
    this.turn.close();
    clearInterval(this.viewing);
    clearTimeout(this.typingIdle);
    if (this.watch && this.presentOn) this.watch.announce(this.presentOn, "left");
    this.watch?.stop();
    this.watch = null;
    this.presentOn = "";
    this.typedAt = 0;
  }

  /** The operator typed in the reply box: say so now and then, and go back to viewing when idle. */
  private typed(): void {
    const threadId = this.threadId;
    if (!this.watch || !threadId) return;
    const now = Date.now();
    if (now - this.typedAt > TYPING_EVERY_MS) {
      this.watch.announce(threadId, "typing");
      this.typedAt = now;
    }
    clearTimeout(this.typingIdle);
    this.typingIdle = window.setTimeout(() => {
      this.typedAt = 0;
      this.watch?.announce(threadId, "viewing");
    }, TYPING_IDLE_MS);
  }

  private paintPresence(): void {
    const others = this.watch && this.presentOn ? this.watch.present(this.presentOn) : [];
    const typing = others.filter((o) => o.state === "typing").map((o) => o.user_id);
    const viewing = others.filter((o) => o.state === "viewing").map((o) => o.user_id);
    const says = (names: string[], what: string) => (names.length ? `${names.join(", ")} ${names.length === 1 ? "is" : "are"} ${what}` : "");
    const text = [says(typing, "typing"), says(viewing, "viewing")].filter(Boolean).join(" · ");
    if (this.presenceLine.textContent !== text) this.presenceLine.textContent = text;
    this.presenceLine.hidden = !text;
  }

  async open(routeView: RouteView | null, route: string, threadId: string, quiet = false): Promise<void> {
    const same = route === this.route && threadId === this.threadId;
    this.route = route;
    this.threadId = threadId;
    if (same && quiet) return this.refresh();
    // Opened from a link before the routes list arrived: read the route (its channel decides the rich parts).
    this.routeView = routeView ?? (can(DOORS.route) ? await call<RouteView>("GET", path(DOORS.route[1], { route_name: route })).catch(() => null) : null);
    if (route !== this.route || threadId !== this.threadId) return;
    this.pagesShown = 1;
    const person = threadId.startsWith(PERSON_PREFIX) ? threadId.slice(PERSON_PREFIX.length) : null;
    const title = h("h2", { id: "thread-title" }, "Thread ", h("span", { class: "name" }, threadId));
    const actions = h("div", { class: "actions" });
    const personBox = person && can(DOORS.person) ? h("section", { class: "person", "aria-labelledby": "person-title" }) : null;
    this.enter(route, threadId);
    this.turn.open(route, threadId);
    fill(this.inbox.el);
    this.notes.clear();
    fill(
      this.el,
      h("a", { href: this.opts.back(route).href, class: "back" }, `← ${this.opts.back(route).label}`),
      title,
      this.presenceLine,
      this.modeBox,
      this.inbox.el,
      actions,
      personBox,
      h("h3", null, "Transcript"),
      this.transcriptErr.el,
      this.transcript,
      this.turn.el,
      this.notes.el,
      can(DOORS.send) ? await this.replyBox(personBox !== null) : null,
    );
    this.renderActions(actions, person);
    if (personBox && person) void this.loadPerson(personBox, person);
    fill(this.transcript, h("li", { class: "muted" }, "Loading transcript…"));
    await this.refresh();
    if (!quiet) focus(title);
  }

  /** Re-reads the transcript and the mode soon (coalesces a burst of live notices). */
  refreshSoon(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => void this.refresh(), 150);
  }

  async refresh(): Promise<void> {
    const route = this.route;
    const threadId = this.threadId;
    if (!route || !threadId) return;
    await Promise.all([
      this.loadTranscript(route, threadId),
      this.loadMode(route, threadId),
      this.inbox.load(route, threadId),
      this.notes.load(route, threadId),
    ]);
  }

  // ───────────── transcript ─────────────

  private async loadTranscript(route: string, threadId: string): Promise<void> {
    if (!can(DOORS.transcript)) {
      fill(this.transcript, h("li", { class: "muted" }, "This key may not read transcripts."));
      return;
    }
    try {
      // Newest first, as many pages as are shown; displayed oldest first.
      const got = await call<{ items: RecordView[]; next_page: number | null }>("GET", path(DOORS.transcript[1], { route_name: route }), {
        query: { thread_id: threadId, order: "desc", pageSize: PAGE * this.pagesShown },
      });
      if (route !== this.route || threadId !== this.threadId) return;
      this.transcriptErr.clear();
      this.hasOlder = got.next_page !== null;
      this.renderTranscript(got.items.slice().reverse());
    } catch (err) {
      this.transcriptErr.show(err);
      fill(this.transcript);
    }
  }

  private renderTranscript(records: RecordView[]): void {
    const items: Child[] = [];
    if (this.hasOlder) {
      const older = h("button", { type: "button" }, "Show older messages");
      older.addEventListener("click", () => {
        this.pagesShown += 1;
        void this.refresh();
      });
      items.push(h("li", { class: "older" }, older));
    }
    if (!records.length) items.push(h("li", { class: "muted" }, "No records (they may have expired)."));
    // A visitor's profile rides on each of their records: shown where it first appears or changes.
    let shown = "";
    for (const r of records) {
      const profile = r.inbound_profile ? JSON.stringify(r.inbound_profile) : shown;
      items.push(recordItem(r, profile !== shown));
      shown = profile;
    }
    // A live refresh keeps the record details the operator opened.
    const open = new Set([...this.transcript.querySelectorAll<HTMLElement>("li.record:has(details[open])")].map((li) => li.dataset.messageId));
    fill(this.transcript, items);
    for (const li of this.transcript.querySelectorAll<HTMLElement>("li.record"))
      if (open.has(li.dataset.messageId)) li.querySelector("details")?.setAttribute("open", "");
  }

  // ───────────── mode ─────────────

  private async loadMode(route: string, threadId: string): Promise<void> {
    if (!can(DOORS.modeRead)) {
      fill(this.modeBox);
      return;
    }
    const err = errorBox();
    let mode: Mode;
    try {
      mode = await call<Mode>("GET", path(DOORS.modeRead[1], { route_name: route }), { query: { thread_id: threadId } });
    } catch (e) {
      err.show(e);
      fill(this.modeBox, err.el);
      return;
    }
    if (route !== this.route || threadId !== this.threadId) return;
    // Unchanged: leave the controls as they are, so a live refresh never steals the focus.
    const shown = `${route}\u0000${threadId}\u0000${mode.mode}\u0000${mode.source}`;
    if (this.modeBox.dataset.shown === shown && this.modeBox.querySelector(".mode-label")) return;
    this.modeBox.dataset.shown = shown;
    const label = h(
      "p",
      { class: `mode-label mode-${mode.mode}`, id: "mode-label" },
      "Mode: ",
      h("strong", null, mode.mode === "manual" ? "Manual (an operator answers)" : "Agent (the target answers)"),
      " · ",
      mode.source === "thread" ? "set on this thread" : "the route's default",
    );
    const controls: Child[] = [];
    if (can(DOORS.modeSet)) {
      const next = mode.mode === "manual" ? "agent" : "manual";
      const button = h("button", { type: "button", class: "primary", "aria-describedby": "mode-label" }, next === "manual" ? "Take over" : "Hand back");
      button.addEventListener(
        "click",
        () =>
          void busy(button, err, async () => {
            await call("PUT", path(DOORS.modeSet[1], { route_name: route }), { body: { thread_id: threadId, mode: next } });
            announce(next === "manual" ? "You took over this thread." : "The thread is handed back to the agent.");
            // Taking a thread over is taking it: it is claimed too (a thread another operator
            // holds stays theirs, and the inbox panel says who).
            if (next === "manual" && can(DOORS.inboxClaim)) {
              await this.inbox.load(route, threadId);
              if (this.inbox.state?.assignee !== currentMe()?.user_id) await this.inbox.claim();
            }
            await this.loadMode(route, threadId);
            focus(this.modeBox.querySelector("button"));
          }),
      );
      controls.push(button);
    }
    fill(this.modeBox, label, controls, err.el);
  }

  // ───────────── actions: forget ─────────────

  private renderActions(box: HTMLElement, person: string | null): void {
    const err = errorBox();
    const buttons: Child[] = [];
    if (can(DOORS.forget)) {
      const forget = h("button", { type: "button", class: "danger" }, "Forget thread");
      forget.addEventListener("click", () => {
        const what = person ? "this person's thread on every route it spans" : "this thread";
        if (!window.confirm(`Forget ${what}? Its records, agent memory and indexes are deleted. This cannot be undone.`)) return;
        const route = this.route;
        void busy(forget, err, async () => {
          const got = await call<{ removed: number }>("DELETE", path(DOORS.forget[1], { route_name: route }), { query: { thread_id: this.threadId } });
          announce(`Thread forgotten (${got.removed} record${got.removed === 1 ? "" : "s"} removed).`);
          this.onForgotten(route);
        });
      });
      buttons.push(forget);
    }
    fill(box, buttons, err.el);
  }

  // ───────────── person ─────────────

  private async loadPerson(box: HTMLElement, personId: string): Promise<void> {
    const err = errorBox();
    fill(box, h("h3", { id: "person-title" }, "Person"), loading("the person"));
    let p: Person;
    try {
      p = await call<Person>("GET", path(DOORS.person[1], { person_id: personId }));
    } catch (e) {
      err.show(e);
      fill(box, h("h3", { id: "person-title" }, "Person"), err.el);
      return;
    }
    const rows = p.addresses.map((a) =>
      h(
        "tr",
        null,
        h("td", null, a.door === "channel" ? (a.channel ?? "channel") : "api"),
        h("td", null, a.address),
        h("td", null, a.routes.join(", ")),
        h("td", null, when(a.linked_at)),
      ),
    );
    const erase = can(DOORS.erase) ? h("button", { type: "button", class: "danger" }, "Erase person") : null;
    erase?.addEventListener("click", () => {
      if (!window.confirm(`Erase person ${p.person_id}? Its thread on every route, its addresses and its runs are deleted. This cannot be undone.`)) return;
      void busy(erase, err, async () => {
        await call("DELETE", path(DOORS.erase[1], { person_id: personId }));
        announce(`Person ${personId} erased.`);
        this.onForgotten(this.route);
      });
    });
    fill(
      box,
      h("h3", { id: "person-title" }, "Person ", h("span", { class: "name" }, p.person_id)),
      h("p", null, `Target ${p.target_kind} ${p.target_name} · locale: `, h("strong", null, p.locale ?? "not set")),
      p.profile ? profileLine(p.profile) : null,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          null,
          h("caption", null, "Addresses across channels"),
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              h("th", { scope: "col" }, "Door"),
              h("th", { scope: "col" }, "Address"),
              h("th", { scope: "col" }, "Routes"),
              h("th", { scope: "col" }, "Linked"),
            ),
          ),
          h("tbody", null, rows),
        ),
      ),
      erase,
      err.el,
    );
    const picker = this.el.querySelector<HTMLSelectElement>("select[name=address]");
    if (picker) for (const a of p.addresses) picker.append(h("option", { value: a.address }, `${a.address} (${a.channel ?? "api"})`));
  }

  // ───────────── reply ─────────────

  private async replyBox(personThread: boolean): Promise<HTMLElement> {
    const route = this.route;
    const threadId = this.threadId;
    const text = h("textarea", { name: "text", rows: 3, maxlength: 100000 });
    text.addEventListener("input", () => this.typed());
    const canned = can(DOORS.canned) && can(DOORS.cannedRender) ? cannedPicker(text, () => ({ route, threadId })) : null;
    const err = errorBox();
    const claimed = h("p", { class: "claimed", role: "alert", hidden: true });
    const rich: Child[] = [];
    const channel =
      this.routeView?.door === "channel" && this.routeView.channel && can(DOORS.channels)
        ? (await channels()).find((c) => c.name === this.routeView?.channel)
        : undefined;
    const caps = channel?.capabilities;
    const mediaUrl = h("input", { type: "url", name: "media-url", autocomplete: "off" });
    const mediaKind = select("media-kind", [
      ["", "infer from the URL"],
      ["image", "image"],
      ["document", "document"],
      ["video", "video"],
      ["audio", "audio"],
    ]);
    const lat = h("input", { type: "number", name: "latitude", step: "any", min: -90, max: 90 });
    const lon = h("input", { type: "number", name: "longitude", step: "any", min: -180, max: 180 });
    const place = h("input", { type: "text", name: "place", autocomplete: "off" });
    const options = h("textarea", { name: "options", rows: 2 });
    if (caps?.media) rich.push(h("fieldset", null, h("legend", null, "Media"), field("Media URL", mediaUrl), field("Kind", mediaKind)));
    if (caps?.location)
      rich.push(h("fieldset", null, h("legend", null, "Location"), field("Latitude", lat), field("Longitude", lon), field("Place name", place)));
    if (caps?.interactive)
      rich.push(h("fieldset", null, h("legend", null, "Reply buttons"), field("Options, one per line", options, "Each line becomes a tappable reply option.")));
    const address = personThread ? select("address", [["", "the thread's latest address"]]) : null;
    const form = h(
      "form",
      { class: "reply card", "aria-labelledby": "reply-title" },
      h("h3", { id: "reply-title" }, "Reply as operator"),
      field("Message", text, `Delivered by the thread's channel or callback; the agent's memory gets it too.${canned ? " Type / for canned responses." : ""}`),
      canned,
      address ? field("Send to", address) : null,
      rich.length ? h("details", { class: "rich" }, h("summary", null, `Rich parts ${channel ? `(${channel.name})` : ""}`), rich) : null,
      err.el,
      claimed,
      h("button", { type: "submit", class: "primary" }, "Send reply"),
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const body: Record<string, unknown> = { thread_id: threadId, text: text.value };
      if (address?.value) body.address = address.value;
      if (mediaUrl.value.trim()) body.media = [{ url: mediaUrl.value.trim(), ...(mediaKind.value ? { kind: mediaKind.value } : {}) }];
      if (lat.value !== "" || lon.value !== "")
        body.location = { latitude: Number(lat.value), longitude: Number(lon.value), ...(place.value.trim() ? { name: place.value.trim() } : {}) };
      const opts = options.value
        .split("\n")
        .map((s) => s.trim())
        .filter(Boolean);
      if (opts.length) body.options = opts.map((o) => ({ text: o, kind: "reply" }));
      const send = (force: boolean) =>
        busy(form.querySelector<HTMLButtonElement>("button[type=submit]"), err, async () => {
          claimed.hidden = true;
          // Answering an unowned thread claims it first, so two operators never both answer one
          // customer: the second one's claim (then send) is refused and offered "Send anyway".
          if (!force && can(DOORS.inboxClaim) && this.inbox.state && this.inbox.state.assignee === null) await this.inbox.claim();
          try {
            await call("POST", path(DOORS.send[1], { route_name: route }), { body: force ? { ...body, force: true } : body });
          } catch (e) {
            // Another operator holds the thread: say who, and let this one answer anyway.
            if (e instanceof ApiError && e.status === 409 && e.code === "thread_claimed") {
              // The refusal names no one (the assignee is stored input): the thread's inbox state does.
              const holder = await holderOf(route, threadId);
              const anyway = h("button", { type: "button", class: "danger" }, "Send anyway");
              anyway.addEventListener("click", () => void send(true));
              fill(claimed, h("strong", null, holder), " holds this thread; your reply was not sent. ", anyway);
              claimed.hidden = false;
              focus(anyway);
              return;
            }
            throw e;
          }
          form.reset();
          announce(force ? "Reply sent (the thread is held by another operator)." : "Reply sent.");
          this.typedAt = 0;
          this.watch?.announce(threadId, "viewing");
          await this.refresh();
          focus(text);
        });
      void send(false);
    });
    return form;
  }
}

/** The route and id a web visitor's upload is referred to by (`web-attachment:{route}/{id}`), or null. */
function webAttachment(url: string): { route: string; id: string } | null {
  const m = /^web-attachment:([a-z0-9][a-z0-9-]{0,62})\/([A-Za-z0-9_-]{43})$/.exec(url);
  return m ? { route: m[1], id: m[2] } : null;
}

/** A button that downloads a web visitor's upload (with the key, so never as a plain link). */
function attachmentButton(ref: { route: string; id: string }, name: string): HTMLElement {
  const status = h("span", { class: "muted", role: "status" });
  const button = h("button", { type: "button", class: "secondary" }, `Download ${name}`);
  button.addEventListener("click", () => {
    status.textContent = "";
    download(path(DOORS.attachment[1], { route_name: ref.route, attachment_id: ref.id }), name).catch((err) => {
      status.textContent = ` ${messageOf(err)}`;
    });
  });
  return h("span", null, button, status);
}

/** A profile on one line: `field: value` each, the site's vouched ones marked. */
function profileLine(p: Profile): HTMLElement {
  const parts = Object.entries(p.fields).map(([k, v]) => `${k}: ${String(v)}${p.verified.includes(k) ? " (verified by the site)" : ""}`);
  return h("p", { class: "profile" }, h("strong", null, "Profile: "), parts.join(" · "));
}

function recordItem(r: RecordView, withProfile = false): HTMLElement {
  const me = currentMe();
  const operator = r.origin === "operator";
  const inbound: Child[] = [];
  if (!operator) {
    const who = r.inbound_kind === "event" ? `Event ${r.inbound_event?.kind ?? ""}` : "Client";
    inbound.push(h("p", { class: "who" }, who));
    if (withProfile && r.inbound_profile) inbound.push(profileLine(r.inbound_profile));
    if (r.inbound_text) inbound.push(h("p", { class: "text" }, r.inbound_text));
    if (r.inbound_attachments?.length) {
      inbound.push(h("p", { class: "muted" }, `${r.inbound_attachments.length} attachment(s): ${r.inbound_attachments.map((a) => a.kind).join(", ")}`));
      for (const a of r.inbound_attachments) {
        const web = webAttachment(a.url);
        if (web && can(DOORS.attachment)) inbound.push(h("p", null, attachmentButton(web, a.filename ?? `${a.kind} attachment`)));
      }
    }
    if (r.inbound_location)
      inbound.push(
        h(
          "p",
          { class: "muted" },
          `Location ${r.inbound_location.latitude}, ${r.inbound_location.longitude}${r.inbound_location.name ? ` (${r.inbound_location.name})` : ""}`,
        ),
      );
  }
  const answer: Child[] = [];
  // The answer is markdown (the web chat's renderer); the client's own text above stays plain.
  if (r.answer !== null && r.answer !== "") answer.push(h("p", { class: "who" }, operator ? "Operator" : "Agent"), markdownText(document, r.answer, "text md"));
  else if (r.answer_status === "silent" || r.status === "silent")
    answer.push(h("p", { class: "muted" }, "No answer (silence: manual mode or a silent reply)."));
  if (r.answer_part) answer.push(h("p", { class: "muted" }, `Rich part: ${Object.keys(r.answer_part).join(", ")}`));
  const rated = ratingMark(r.feedback);
  if (rated) answer.push(h("p", { class: "rated" }, rated));
  const meta: Child[] = [statusChip(r.status), " "];
  if (typeof r.attempts === "number") meta.push(`${r.attempts} delivery attempt${r.attempts === 1 ? "" : "s"} · `);
  meta.push(when(r.created_at));
  return h(
    "li",
    { class: `record${operator ? " operator" : ""}`, "data-message-id": r.message_id, "data-status": r.status },
    operator ? h("span", { class: "badge" }, "Operator message") : null,
    inbound.length ? h("div", { class: "in" }, inbound) : null,
    answer.length ? h("div", { class: "out" }, answer) : null,
    h("p", { class: "meta" }, meta),
    r.error ? h("p", { class: "reason" }, "Error: ", r.error) : null,
    me?.admin || typeof r.attempts === "number" ? h("details", null, h("summary", null, "Record detail"), h("pre", null, JSON.stringify(r, null, 2))) : null,
  );
}

/** Who holds the thread, from its inbox state ("another operator" when it cannot be read). */
async function holderOf(route: string, threadId: string): Promise<string> {
  try {
    const s = await call<{ assignee: string | null }>("GET", path(DOORS.inboxState[1], { route_name: route }), { query: { thread_id: threadId } });
    return s.assignee ?? "another operator";
  } catch {
    return "another operator";
  }
}
