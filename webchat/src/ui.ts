/**
 * The chat itself, shared by the page and the widget (docs/web-channel-client.md): renders the
 * conversation's stream frames, sends messages and answers, and keeps the stream open.
 *
 * - Entries are keyed by `seq`. An entry already shown is never shown again, and a reconnect asks
 *   only for entries after the highest seq shown (`after=`), so a reload or a dropped socket
 *   replays the transcript once.
 * - A message being sent shows at once as "sending"; when the stream brings it back (the visitor's
 *   entry) that same row becomes the entry, so it is neither shown nor announced twice. Each
 *   message carries a `client_message_id` kept across its retries, so the service takes it once.
 * - The transcript is a polite live region; it is marked busy while a backlog replays so a screen
 *   reader does not read the whole history on load. Connection changes go to a status line.
 */
import { el, randomId, webUrl } from "./dom";
import { locale, t } from "./strings";
import { markdownBlock, plainBlock } from "./markdown";
import { type Attachment, WebError, type Transport } from "./transport";
import { isTurnState, LiveTurns } from "./turns";
import { type Rating, feedbackBar } from "./feedback";
import type { StringKey } from "../../src/web-chat/strings/en";
import { type Hours, hoursLine } from "./hours";

export type Role = "visitor" | "bot" | "operator";
export type Option = { id?: string; text: string; kind?: string; url?: string };
export type Media = { kind: string; url: string; caption?: string; filename?: string };
export type Part = {
  media?: Media[];
  options?: Option[];
  /** An ask-less form's schema: its fields are filled in and sent as one message. */
  schema?: Record<string, unknown>;
  question?: { interaction_id: string; prompt: string; options: Option[] | null; form: object | null };
  /** The visitor's own uploads their message carried. */
  attachments?: Attachment[];
};
/** `rating`: on an answer the visitor may rate, their rating (null: none); absent on other entries. */
export type Entry = {
  seq: number;
  role: Role;
  text: string;
  part: Part | null;
  at: string;
  message_id?: string;
  stopped?: boolean;
  rating?: Rating | null;
  /** The service's parse of the shown text (src/shared/markdown.ts blocks), checked as it is rendered. */
  md?: unknown;
};

/** The elements the chat runs on: the page's own (by id) or the widget's panel. */
export type ChatElements = {
  list: HTMLOListElement;
  status: HTMLElement;
  form: HTMLFormElement;
  input: HTMLTextAreaElement;
  send: HTMLButtonElement;
  renew: HTMLButtonElement;
};

export type ChatHooks = {
  /** A new entry was shown (`live`: it arrived after the backlog). The widget's unread mark. */
  onEntry?: (entry: Entry, live: boolean) => void;
  /**
   * The session is gone and this transport cannot renew it (the page reloads: its door mints a new
   * one; the widget asks its page for a fresh user proof when `err` refused one). True when
   * handled; false leaves the chat showing that it ended.
   */
  onSessionLost?: (err?: unknown) => boolean;
  /**
   * The route's config when the surface already asked for it (the widget, for the person's
   * locale), so the first read is not made twice; undefined: the chat asks the door itself.
   */
  config?: () => Promise<Config> | undefined;
};

/** What `POST config` answers that the chat uses: the hours line, the pre-chat form, the upload policy. */
export type Config = Hours & { prechat?: Schema | null; attachments?: { enabled?: boolean } };

export type Schema = Record<string, unknown>;

const MAX_CHIPS = 10;
const MAX_MEDIA = 10;
const MAX_FIELDS = 20;
const PING_MS = 25_000;
const FIRST_PAUSE_MS = 1000;
const MAX_PAUSE_MS = 30_000;
const SEND_TRIES = 4;

const WHO = { visitor: "who.visitor", bot: "who.bot", operator: "who.operator" } as const satisfies Record<Role, StringKey>;

type Pending = { id: string; text: string; row: HTMLLIElement; messageId?: string; tries: number; files?: string[] };
/** A file being attached: its id once the upload is stored. */
type Upload = { id?: string; row: HTMLLIElement };

export class Chat {
  private readonly doc: Document;
  private highest = 0;
  private readonly shown = new Set<number>();
  private pending: Pending[] = [];
  private ws: WebSocket | null = null;
  /** Bumped whenever the current socket or conversation is abandoned, so late callbacks are ignored. */
  private generation = 0;
  private pause = FIRST_PAUSE_MS;
  private retry: number | undefined;
  private ping: number | undefined;
  private started = false;
  private live = false;
  private ended = false;
  private busyRenewing = false;
  private readonly turns: LiveTurns;
  private uploads: Upload[] = [];
  private attachButton: HTMLElement | undefined;
  private readonly tray: HTMLUListElement;
  /** The pre-chat form's schema (null: none or not known yet), whether this conversation showed it, and whether the hours line is up. */
  private pre: Schema | null = null;
  private asked = false;
  private hours = false;

  constructor(
    private readonly t: Transport,
    private readonly e: ChatElements,
    private readonly hooks: ChatHooks = {},
  ) {
    this.doc = e.list.ownerDocument;
    this.turns = new LiveTurns(t, e.list, {
      render: (text, md) => answerText(this.doc, text, md),
      say: (text) => this.say(text),
      lost: () => this.sessionLost(),
      refocus: () => this.focusInput(),
    });
    this.tray = this.filePicker();
    e.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.submit();
    });
    e.input.addEventListener("keydown", (ev) => {
      // Enter sends, Shift+Enter is a new line; an IME composing text keeps its Enter.
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        e.form.requestSubmit();
      }
    });
    e.renew.addEventListener("click", () => void this.renew());
    const view = this.doc.defaultView;
    view?.addEventListener("online", () => this.soon());
    this.doc.addEventListener("visibilitychange", () => {
      if (this.doc.visibilityState === "visible") this.soon();
    });
  }

  /** Opens the stream (once; later calls do nothing). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.e.list.setAttribute("aria-busy", "true");
    void this.connect();
    this.config();
  }

  /**
   * The route's config, read once per conversation: the hours line (away until the next opening,
   * or how soon a reply comes; shown once) and the pre-chat form (without what the site vouches
   * for). Nothing on failure.
   */
  private config(): void {
    this.pre = null;
    this.asked = false;
    (this.hooks.config?.() ?? this.t.post<Config>("config", {})).then(
      (h) => {
        // A chat that takes no files shows no attach button.
        if (this.attachButton) this.attachButton.hidden = h.attachments?.enabled === false;
        const line = hoursLine(h);
        if (line && !this.hours) this.e.list.before(el(this.doc, "p", { class: "tai-hours" }, line));
        this.hours ||= !!line;
        this.pre = h.prechat ?? null;
        this.ask();
      },
      () => undefined,
    );
  }

  /**
   * Before the first message of a conversation (the stream is live and showed nothing), the
   * pre-chat form, with the message box locked until it is sent or skipped (sent empty). Its
   * answers go as the first message's `profile`.
   */
  private ask(): void {
    if (!this.pre || this.asked || !this.live || this.highest) return;
    this.asked = true;
    const row = el(this.doc, "li", { class: "tai-entry tai-bot" });
    const lock = (on: boolean) => (this.e.input.disabled = this.e.send.disabled = on);
    row.append(
      el(
        this.doc,
        "div",
        { class: "tai-bubble" },
        el(this.doc, "p", { class: "tai-text" }, t("prechat.intro")),
        this.formBox(this.pre, () => {
          row.remove();
          lock(false);
          this.focusInput();
        }),
      ),
    );
    lock(true);
    this.e.list.append(row);
  }

  /** The text box, for callers that move focus into the chat. */
  focusInput(): void {
    this.e.input.focus();
  }

  /** Writes the status line (connection changes, failures, confirmations). */
  say(text: string): void {
    this.e.status.textContent = text;
  }

  /** The form's submit: its text and the files attached (once every one is stored). */
  private submit(): void {
    const text = this.e.input.value.trim();
    const files = this.uploads;
    if ((!text && !files.length) || this.ended) return;
    if (files.some((u) => !u.id)) return this.say(t("attach.wait"));
    this.e.input.value = "";
    this.setUploads([]);
    this.sendText(
      text,
      files.map((u) => u.id ?? ""),
    );
  }

  // ---- files ----

  /** A picker beside Send, and the files picked so far above the text box (answered). */
  private filePicker(): HTMLUListElement {
    const doc = this.doc;
    const picker = el(doc, "input", { type: "file", multiple: true, class: "tai-sr" });
    const tray = el(doc, "ul", { class: "tai-tray", "aria-label": t("attach.list") });
    this.attachButton = el(doc, "label", { class: "tai-attach" }, picker, el(doc, "span", { class: "tai-sr" }, t("attach.add")));
    this.e.send.before(this.attachButton);
    this.e.input.before(tray);
    picker.addEventListener("change", () => {
      for (const f of picker.files ?? []) this.attach(f);
      picker.value = "";
    });
    return tray;
  }

  private setUploads(next: Upload[]): void {
    this.uploads = next;
    this.tray.replaceChildren(...next.map((u) => u.row));
    // A message may be files alone.
    this.e.input.required = !next.length;
  }

  /** Uploads `f` at once, shown in the tray (a thumbnail for an image) with a button that takes it out. */
  private attach(f: File): void {
    const doc = this.doc;
    const remove = el(doc, "button", { type: "button", class: "tai-x", "aria-label": t("attach.remove", { name: f.name }) }, "×");
    const u: Upload = {
      row: el(doc, "li", { class: "tai-up tai-busy" }, f.type.startsWith("image/") ? this.thumb(f, "") : null, f.name, remove),
    };
    const drop = () => this.setUploads(this.uploads.filter((x) => x !== u));
    remove.addEventListener("click", drop);
    this.setUploads([...this.uploads, u]);
    this.t.upload(f).then(
      (a) => {
        u.id = a.attachment_id;
        u.row.classList.remove("tai-busy");
        this.say(t("attach.done", { name: f.name }));
      },
      (err) => {
        drop();
        if (err instanceof WebError && err.status === 401) return this.sessionLost(err);
        // A chat that takes no files: the button goes.
        if (err instanceof WebError && err.code === "attachments_disabled" && this.attachButton) this.attachButton.hidden = true;
        this.say(t("attach.failed", { name: f.name, why: messageOf(err) }));
      },
    );
  }

  /** An image from a blob; its object URL is let go once it has loaded. */
  private thumb(b: Blob, alt: string): HTMLImageElement {
    const url = URL.createObjectURL(b);
    const img = el(this.doc, "img", { src: url, alt });
    img.addEventListener("load", () => URL.revokeObjectURL(url), { once: true });
    return img;
  }

  /** An upload the entry carried: an image shown, another file a button that downloads it. */
  private fileCard(a: Attachment): HTMLElement {
    const doc = this.doc;
    const name = a.filename || t("attach.file");
    const gone = () => el(doc, "p", { class: "tai-card tai-file" }, t("attach.gone", { name }));
    if (a.kind === "image") {
      const card = el(doc, "figure", { class: "tai-card tai-image" });
      this.t.file(a.attachment_id).then(
        (b) => card.append(this.thumb(b, name)),
        () => card.replaceWith(gone()),
      );
      return card;
    }
    const button = el(doc, "button", { type: "button", class: "tai-card tai-file" }, name);
    button.addEventListener("click", () =>
      this.t.file(a.attachment_id).then(
        (b) => {
          const url = URL.createObjectURL(b);
          el(doc, "a", { href: url, download: name }).click();
          setTimeout(() => URL.revokeObjectURL(url), 10_000);
        },
        () => button.replaceWith(gone()),
      ),
    );
    return button;
  }

  // ---- the stream ----

  /** Reconnects now if the stream is down and waiting for its next try. */
  private soon(): void {
    if (!this.started || this.ended || this.ws || this.retry === undefined) return;
    clearTimeout(this.retry);
    this.retry = undefined;
    void this.connect();
  }

  private async connect(): Promise<void> {
    this.retry = undefined;
    if (this.ended) return;
    const generation = this.generation;
    if (!this.live) this.say(t("status.connecting"));
    let ws: WebSocket;
    try {
      ws = await this.t.openStream(this.highest);
    } catch (err) {
      if (generation !== this.generation) return;
      if (err instanceof WebError && err.status === 401) return this.sessionLost(err);
      if (err instanceof WebError && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429) {
        // A refusal (unknown chat, origin not allowed) does not change by retrying.
        this.say(t("status.unavailable", { reason: err.message }));
        return;
      }
      this.later();
      return;
    }
    if (generation !== this.generation) {
      ws.close(1000);
      return;
    }
    this.ws = ws;
    ws.addEventListener("message", (ev) => {
      if (this.ws === ws) this.frame(ws, ev.data);
    });
    ws.addEventListener("close", () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.live = false;
      clearInterval(this.ping);
      this.turns.lost();
      if (!this.ended) this.later();
    });
    clearInterval(this.ping);
    this.ping = window.setInterval(() => {
      if (ws.readyState === WebSocket.OPEN) ws.send("ping");
    }, PING_MS);
  }

  private later(): void {
    clearTimeout(this.retry);
    const wait = this.pause + Math.floor(Math.random() * (this.pause / 2));
    this.say(t("status.reconnecting", { seconds: Math.ceil(wait / 1000) }));
    this.retry = window.setTimeout(() => void this.connect(), wait);
    this.pause = Math.min(this.pause * 2, MAX_PAUSE_MS);
  }

  private drop(): void {
    this.generation += 1;
    clearTimeout(this.retry);
    this.retry = undefined;
    clearInterval(this.ping);
    const ws = this.ws;
    this.ws = null;
    this.live = false;
    this.turns.lost();
    ws?.close(1000);
  }

  private frame(ws: WebSocket, data: unknown): void {
    if (typeof data !== "string" || data === "pong") return;
    let f: { type?: unknown; entry?: unknown; message_id?: unknown; state?: unknown; text?: unknown; md?: unknown };
    try {
      f = JSON.parse(data);
    } catch {
      return;
    }
    if (f.type === "entry") {
      const entry = asEntry(f.entry);
      if (entry) this.show(entry);
    } else if (f.type === "ready") {
      this.pause = FIRST_PAUSE_MS;
      this.live = true;
      this.e.list.setAttribute("aria-busy", "false");
      this.say("");
      this.turns.ready();
      this.ask();
    } else if (f.type === "turn" && typeof f.message_id === "string" && isTurnState(f.state)) {
      this.turns.turn(f.message_id, f.state);
    } else if (f.type === "draft" && typeof f.message_id === "string" && typeof f.text === "string") {
      this.turns.draft(f.message_id, f.text, f.md);
    } else if (f.type === "ended") {
      this.drop();
      ws.close(1000);
      this.end(t("status.ended"));
    }
  }

  private end(message: string): void {
    this.ended = true;
    // A signed-in widget hides "New conversation" while its session lives; once it ended, it is the way on.
    this.e.renew.hidden = false;
    this.e.input.disabled = true;
    this.e.send.disabled = true;
    this.e.list.setAttribute("aria-busy", "false");
    this.say(message);
  }

  private sessionLost(err?: unknown): void {
    this.drop();
    if (!this.hooks.onSessionLost?.(err)) this.end(t("status.session_ended"));
  }

  /** "New conversation": a fresh session, an empty transcript, and the stream from the start. */
  private async renew(): Promise<void> {
    if (this.busyRenewing) return;
    this.busyRenewing = true;
    this.e.renew.disabled = true;
    this.drop();
    try {
      await this.t.rotate();
    } catch (err) {
      this.busyRenewing = false;
      this.e.renew.disabled = false;
      if (err instanceof WebError && err.status === 401 && this.hooks.onSessionLost?.(err)) return;
      this.say(t("status.renew_failed", { reason: messageOf(err) }));
      if (!this.ended && this.started) void this.connect();
      return;
    }
    this.busyRenewing = false;
    this.e.renew.disabled = false;
    this.started = true;
    this.reset();
    this.say(t("status.renewed"));
    this.e.input.focus();
  }

  /**
   * Shows the conversation from the start: an empty transcript and the stream from `after=0`
   * (another session's conversation: a new one, or a signed-in user's). Nothing before `start`.
   */
  reset(): void {
    if (!this.started) return;
    this.drop();
    this.turns.clear();
    this.setUploads([]);
    this.e.list.replaceChildren();
    this.shown.clear();
    this.pending = [];
    this.highest = 0;
    this.pause = FIRST_PAUSE_MS;
    this.ended = false;
    this.e.input.disabled = false;
    this.e.send.disabled = false;
    this.e.list.setAttribute("aria-busy", "true");
    this.config();
    void this.connect();
  }

  // ---- rendering ----

  private show(entry: Entry): void {
    if (this.shown.has(entry.seq)) return;
    this.shown.add(entry.seq);
    const list = this.e.list;
    const stick = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    // Quick-reply options belong to the latest answer only: a newer entry retires them.
    if (entry.seq > this.highest) {
      for (const chip of list.querySelectorAll<HTMLButtonElement>(".tai-options .tai-chip")) chip.disabled = true;
    }
    const mine = entry.role === "visitor" ? this.claimPending(entry) : null;
    const row = mine ?? this.doc.createElement("li");
    this.fillRow(row, entry);
    if (!mine || !inOrder(list, row, entry.seq)) this.place(row, entry.seq);
    if (entry.role !== "visitor") this.turns.answered(entry, row);
    this.highest = Math.max(this.highest, entry.seq);
    if (stick || entry.role === "visitor") list.scrollTop = list.scrollHeight;
    this.hooks.onEntry?.(entry, this.live);
  }

  /** The row of the message this visitor entry echoes: same message id, else same text. */
  private claimPending(entry: Entry): HTMLLIElement | null {
    let i = entry.message_id ? this.pending.findIndex((p) => p.messageId === entry.message_id) : -1;
    if (i < 0) i = this.pending.findIndex((p) => p.text === entry.text.trim());
    if (i < 0) return null;
    const [p] = this.pending.splice(i, 1);
    return p.row;
  }

  /** Inserts `row` among the entries by seq, before any message still being sent. */
  private place(row: HTMLLIElement, seq: number): void {
    for (const child of this.e.list.children) {
      if (child === row) continue;
      const s = Number((child as HTMLElement).dataset.seq);
      if (!(s > 0) || s > seq) {
        this.e.list.insertBefore(row, child);
        return;
      }
    }
    this.e.list.append(row);
  }

  private fillRow(row: HTMLLIElement, entry: Entry): void {
    row.className = `tai-entry tai-${entry.role}`;
    row.dataset.seq = String(entry.seq);
    const bubble = el(this.doc, "div", { class: "tai-bubble" });
    const q = entry.part?.question;
    const text = entry.text || q?.prompt || "";
    // Answers and operator messages are markdown; the visitor's own words stay as typed.
    if (text) bubble.append(entry.role === "visitor" ? el(this.doc, "p", { class: "tai-text" }, text) : answerText(this.doc, text, entry.md));
    if (q && q.prompt && entry.text && q.prompt !== entry.text) bubble.append(el(this.doc, "p", { class: "tai-text" }, q.prompt));
    for (const m of (entry.part?.media ?? []).slice(0, MAX_MEDIA)) bubble.append(this.mediaCard(m));
    for (const a of (entry.part?.attachments ?? []).slice(0, MAX_MEDIA)) bubble.append(this.fileCard(a));
    const options = entry.part?.options ?? [];
    const replies = options.filter((o) => o.kind !== "link");
    if (replies.length) bubble.append(this.chips(replies, "tai-options", (o) => this.sendText(o.text)));
    for (const o of options.filter((x) => x.kind === "link").slice(0, MAX_CHIPS)) {
      const href = o.url ? webUrl(o.url) : null;
      if (href) bubble.append(el(this.doc, "a", { class: "tai-card tai-link", href, target: "_blank", rel: "noopener noreferrer" }, o.text));
    }
    if (entry.part?.schema) bubble.append(this.formBox(entry.part.schema));
    if (q)
      bubble.append(
        q.options?.length
          ? this.chips(q.options, "tai-question", (o, done) => this.answer(q.interaction_id, o.id ? { option_id: o.id } : { text: o.text }, done))
          : this.answerBox(q.interaction_id),
      );
    row.replaceChildren(el(this.doc, "span", { class: entry.role === "operator" ? "tai-who" : "tai-who tai-sr" }, t(WHO[entry.role])), bubble);
    const time = timeOf(this.doc, entry.at);
    if (time) row.append(time);
    if (entry.message_id && entry.rating !== undefined)
      row.append(
        feedbackBar(
          this.doc,
          () => this.e.list,
          entry.message_id,
          entry.rating,
          (id, rating) => this.rate(id, rating),
        ),
      );
  }

  /** Sends the visitor's rating of an answer (null: taken back); says how it went. */
  private async rate(messageId: string, rating: Rating | null): Promise<Rating | null> {
    try {
      const got = await this.t.post<{ rating: Rating | null }>("feedback", { message_id: messageId, rating });
      this.say(t(got.rating === null ? "feedback.removed" : "feedback.thanks"));
      return got.rating;
    } catch (err) {
      if (err instanceof WebError && err.status === 401) this.sessionLost();
      else this.say(t("feedback.failed", { reason: messageOf(err) }));
      throw err;
    }
  }

  private mediaCard(m: Media): HTMLElement {
    const name = m.caption || m.filename || t(m.kind === "image" ? "media.image" : "media.file");
    const image = m.kind === "image" ? webUrl(m.url, true) : null;
    if (image) {
      const img = el(this.doc, "img", {
        src: image,
        alt: name,
        loading: "lazy",
        decoding: "async",
        referrerpolicy: "no-referrer",
      });
      return el(
        this.doc,
        "figure",
        { class: "tai-card tai-image" },
        el(this.doc, "a", { href: image, target: "_blank", rel: "noopener noreferrer" }, img),
        m.caption ? el(this.doc, "figcaption", {}, m.caption) : null,
      );
    }
    const link = webUrl(m.url);
    if (!link) return el(this.doc, "p", { class: "tai-card tai-file" }, t("media.unavailable", { name }));
    return el(this.doc, "a", { class: "tai-card tai-file", href: link, target: "_blank", rel: "noopener noreferrer" }, name);
  }

  private chips(options: Option[], kind: string, onTap: (o: Option, done: (ok: boolean) => void) => void): HTMLElement {
    const group = el(this.doc, "div", { class: `tai-chips ${kind}`, role: "group", "aria-label": t("choices") });
    const buttons: HTMLButtonElement[] = [];
    for (const o of options.slice(0, MAX_CHIPS)) {
      if (!o || typeof o.text !== "string") continue;
      const b = el(this.doc, "button", { type: "button", class: "tai-chip", "aria-pressed": "false" }, o.text);
      b.addEventListener("click", () => {
        for (const other of buttons) other.disabled = true;
        b.setAttribute("aria-pressed", "true");
        onTap(o, (ok) => {
          if (ok) return;
          b.setAttribute("aria-pressed", "false");
          for (const other of buttons) other.disabled = false;
        });
      });
      buttons.push(b);
      group.append(b);
    }
    return group;
  }

  /**
   * An ask-less form: one labelled field per property of the schema (text, an email address, number,
   * a checkbox for a boolean, a choice for an enum), sent as the visitor's next message with `form`.
   * With `done`, the pre-chat form: sent as `profile`, and `done` runs once it is in (or at once when
   * nothing was filled in).
   */
  private formBox(schema: Schema, done?: () => void): HTMLElement {
    const props = schema.properties && typeof schema.properties === "object" ? (schema.properties as Record<string, Record<string, unknown>>) : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []);
    const form = el(this.doc, "form", { class: "tai-answer tai-formbox" });
    const read: Array<() => [string, unknown] | null> = [];
    for (const [name, p] of Object.entries(props).slice(0, MAX_FIELDS)) {
      if (!p || typeof p !== "object") continue;
      const id = `tai-f-${randomId()}`;
      const label = el(this.doc, "label", { for: id, class: "tai-label" }, typeof p.title === "string" ? p.title : name);
      if (Array.isArray(p.enum)) {
        const select = el(this.doc, "select", { id, class: "tai-input", required: required.has(name) });
        for (const v of p.enum.slice(0, 50)) select.append(el(this.doc, "option", { value: String(v) }, String(v)));
        form.append(label, select);
        read.push(() => [name, select.value]);
      } else if (p.type === "boolean") {
        const box = el(this.doc, "input", { id, type: "checkbox", class: "tai-check" });
        form.append(box, label);
        read.push(() => [name, box.checked]);
      } else {
        const numeric = p.type === "number" || p.type === "integer";
        const input = el(this.doc, "input", {
          id,
          class: "tai-input",
          type: numeric ? "number" : p.format === "email" ? "email" : "text",
          required: required.has(name),
          autocomplete: "off",
        });
        form.append(label, input);
        read.push(() => (input.value === "" ? null : [name, numeric ? Number(input.value) : input.value]));
      }
    }
    const button = el(this.doc, "button", { type: "submit", class: "tai-send" }, t(done ? "prechat.submit" : "send"));
    form.append(button);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const values: Record<string, unknown> = {};
      for (const r of read) {
        const kv = r();
        if (kv) values[kv[0]] = kv[1];
      }
      if (done && !Object.keys(values).length) return done();
      button.disabled = true;
      this.t.post("messages", { text: "", [done ? "profile" : "form"]: values, client_message_id: randomId() }).then(
        () => (done ? done() : this.say(t("form.sent"))),
        (err) => {
          button.disabled = false;
          if (err instanceof WebError && err.status === 401) this.sessionLost();
          else this.say(t("form.failed", { reason: messageOf(err) }));
        },
      );
    });
    return form;
  }

  /** A question without choices (or with a form): answered by a line of text. */
  private answerBox(interactionId: string): HTMLElement {
    const id = `tai-a-${randomId()}`;
    const input = el(this.doc, "input", { id, class: "tai-input tai-answer-input", type: "text", autocomplete: "off", maxlength: "8000", required: true });
    const button = el(this.doc, "button", { type: "submit", class: "tai-send" }, t("answer.send"));
    const form = el(this.doc, "form", { class: "tai-answer" }, el(this.doc, "label", { for: id, class: "tai-label" }, t("answer.label")), input, button);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      input.disabled = true;
      button.disabled = true;
      this.answer(interactionId, { text }, (ok) => {
        if (ok) return;
        input.disabled = false;
        button.disabled = false;
      });
    });
    return form;
  }

  // ---- sending ----

  private answer(interactionId: string, body: Record<string, unknown>, done: (ok: boolean) => void): void {
    this.t.post(`questions/${encodeURIComponent(interactionId)}/answer`, body).then(
      () => {
        this.say(t("answer.sent"));
        done(true);
      },
      (err) => {
        if (err instanceof WebError && err.status === 401) this.sessionLost();
        else this.say(t("answer.failed", { reason: messageOf(err) }));
        done(false);
      },
    );
  }

  /** Shows `text` as being sent and sends it (with the uploads `files`); the stream's echo replaces the row. */
  sendText(text: string, files?: string[]): void {
    if (this.ended) return;
    const row = el(this.doc, "li", { class: "tai-entry tai-visitor tai-pending" });
    const p: Pending = { id: randomId(), text, row, tries: 0, files };
    row.append(
      el(this.doc, "span", { class: "tai-who tai-sr" }, t(WHO.visitor)),
      el(this.doc, "div", { class: "tai-bubble" }, el(this.doc, "p", { class: "tai-text" }, text)),
    );
    this.pending.push(p);
    this.e.list.append(row);
    this.e.list.scrollTop = this.e.list.scrollHeight;
    this.attempt(p);
  }

  private attempt(p: Pending): void {
    p.tries += 1;
    setNote(this.doc, p.row, t("sending"));
    this.t.post<{ message_id?: string }>("messages", { text: p.text, client_message_id: p.id, attachments: p.files?.length ? p.files : undefined }).then(
      (data) => {
        if (data && typeof data.message_id === "string") p.messageId = data.message_id;
        if (p.row.classList.contains("tai-pending")) setNote(this.doc, p.row, t("sent"));
      },
      (err) => {
        const transient = !(err instanceof WebError) || err.status === 0 || err.status === 408 || err.status === 429 || err.status >= 500;
        if (transient && p.tries < SEND_TRIES) {
          // Same client_message_id on every try: a try that did arrive is not taken twice.
          window.setTimeout(() => this.attempt(p), 1000 * 2 ** (p.tries - 1));
          return;
        }
        if (err instanceof WebError && err.status === 401) this.sessionLost(err);
        this.failed(p, messageOf(err), transient);
      },
    );
  }

  private failed(p: Pending, why: string, canRetry: boolean): void {
    p.row.classList.add("tai-failed");
    const note = setNote(this.doc, p.row, t("failed.note", { reason: why }));
    if (canRetry) {
      const again = el(this.doc, "button", { type: "button", class: "tai-retry" }, t("retry"));
      again.addEventListener("click", () => {
        p.row.classList.remove("tai-failed");
        p.tries = 0;
        this.attempt(p);
      });
      note.append(" ", again);
    }
    this.say(t("failed.status", { reason: why }));
  }
}

/**
 * An answer's text as shown: a shown answer and a draft of one are built by this one function, from
 * the service's parse when it sent one, else as one plain paragraph.
 */
export function answerText(doc: Document, text: string, md: unknown): HTMLElement {
  return Array.isArray(md) ? markdownBlock(doc, md, "tai-text tai-md") : plainBlock(doc, text, "tai-text tai-md");
}

function setNote(doc: Document, row: HTMLElement, text: string): HTMLElement {
  let note = row.querySelector<HTMLElement>(".tai-note");
  if (!note) {
    note = el(doc, "span", { class: "tai-note" });
    row.append(note);
  }
  note.textContent = text;
  return note;
}

function inOrder(list: HTMLOListElement, row: HTMLElement, seq: number): boolean {
  const prev = row.previousElementSibling as HTMLElement | null;
  const next = row.nextElementSibling as HTMLElement | null;
  const before = prev ? Number(prev.dataset.seq) : 0;
  const after = next ? Number(next.dataset.seq) : Infinity;
  return row.parentElement === list && before < seq && !(after < seq);
}

function timeOf(doc: Document, at: string): HTMLElement | null {
  const when = new Date(at);
  if (Number.isNaN(when.getTime())) return null;
  return el(doc, "time", { class: "tai-time", datetime: when.toISOString() }, when.toLocaleTimeString(locale(), { hour: "2-digit", minute: "2-digit" }));
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isOption(o: unknown): o is Option {
  if (!o || typeof o !== "object") return false;
  const x = o as Option;
  return typeof x.text === "string" && (x.id === undefined || typeof x.id === "string") && (x.url === undefined || typeof x.url === "string");
}

/** A stream entry checked field by field: a malformed frame is skipped, never rendered half. */
export function asEntry(v: unknown): Entry | null {
  if (!v || typeof v !== "object") return null;
  const e = v as Record<string, unknown>;
  if (typeof e.seq !== "number" || !Number.isSafeInteger(e.seq) || e.seq < 1) return null;
  if (e.role !== "visitor" && e.role !== "bot" && e.role !== "operator") return null;
  const part = e.part && typeof e.part === "object" ? (e.part as Record<string, unknown>) : null;
  let clean: Part | null = null;
  if (part) {
    clean = {};
    if (Array.isArray(part.media)) {
      clean.media = part.media.filter(
        (m): m is Media => !!m && typeof m === "object" && typeof (m as Media).url === "string" && typeof (m as Media).kind === "string",
      );
    }
    if (Array.isArray(part.options)) clean.options = part.options.filter(isOption);
    if (Array.isArray(part.attachments))
      clean.attachments = part.attachments.filter(
        (a): a is Attachment => !!a && typeof a === "object" && typeof a.attachment_id === "string" && /^[\w-]{43}$/.test(a.attachment_id),
      );
    if (part.schema && typeof part.schema === "object" && !Array.isArray(part.schema)) clean.schema = part.schema as Record<string, unknown>;
    const q = part.question && typeof part.question === "object" ? (part.question as Record<string, unknown>) : null;
    if (q && typeof q.interaction_id === "string") {
      clean.question = {
        interaction_id: q.interaction_id,
        prompt: typeof q.prompt === "string" ? q.prompt : "",
        options: Array.isArray(q.options) ? q.options.filter(isOption) : null,
        form: q.form && typeof q.form === "object" ? q.form : null,
      };
    }
  }
  return {
    seq: e.seq,
    role: e.role,
    text: typeof e.text === "string" ? e.text : "",
    part: clean,
    at: typeof e.at === "string" ? e.at : "",
    message_id: typeof e.message_id === "string" ? e.message_id : undefined,
    stopped: e.stopped === true ? true : undefined,
    ...(e.rating === "up" || e.rating === "down" || e.rating === null ? { rating: e.rating } : {}),
    md: e.md,
  };
}

/** The chat's markup for a surface that has none (the widget): the same structure as the page's. */
export function buildChat(doc: Document, title: string, idPrefix: string): { root: HTMLElement; head: HTMLElement; elements: ChatElements } {
  const id = (s: string) => `${idPrefix}-${s}`;
  const list = el(doc, "ol", {
    id: id("transcript"),
    class: "tai-list",
    "aria-live": "polite",
    "aria-relevant": "additions",
    "aria-label": t("transcript"),
    "aria-busy": "true",
    tabindex: "0",
  });
  const status = el(doc, "p", { id: id("status"), class: "tai-status", role: "status" });
  const input = el(doc, "textarea", {
    id: id("input"),
    class: "tai-input",
    name: "text",
    rows: "2",
    maxlength: "8000",
    required: true,
    autocomplete: "off",
    "aria-describedby": id("hint"),
  });
  const send = el(doc, "button", { type: "submit", class: "tai-send" }, t("send"));
  const form = el(
    doc,
    "form",
    { class: "tai-form" },
    el(doc, "label", { for: id("input"), class: "tai-label" }, t("message")),
    input,
    send,
    el(doc, "p", { id: id("hint"), class: "tai-hint" }, t("hint")),
  );
  const renew = el(doc, "button", { type: "button", class: "tai-new" }, t("new"));
  const heading = el(doc, "h2", { id: id("title"), class: "tai-title" }, title);
  const head = el(doc, "div", { class: "tai-head" }, heading, renew);
  const root = el(doc, "div", { class: "tai-chat" }, head, list, status, form);
  return { root, head, elements: { list, status, form, input, send, renew } };
}
