/**
 * A turn as it happens (docs/web-channel-client.md "Live turns"): the stream's `turn` frames say
 * where the visitor's turn is, its `draft` frames carry the whole answer drafted so far, and the
 * final `entry` with the same `message_id` takes the draft's place.
 *
 * - "Assistant is typing…" shows exactly while a turn is queued, running or in a tool call. It is
 *   its own polite live region, written once when typing starts, so a screen reader hears it once
 *   per turn and never per draft. The drafts themselves are hidden from assistive technology: the
 *   answer is read when its entry arrives.
 * - A draft row has no seq, so entries are placed before it and it stays at the bottom; each frame
 *   replaces its text. The answer entry is inserted by seq and the draft row removed, so the answer
 *   is never shown twice.
 * - A lost socket forgets every turn (typing stops); the next stream's `ready` drops the drafts its
 *   backlog did not answer, and the `turn` and `draft` frames after it bring a running turn back.
 * - "Stop" shows while a turn runs: `POST stop`, with the same session as every other request.
 */
import { el } from "./dom";
import { t } from "./strings";
import { type Transport, WebError } from "./transport";

export type TurnState = "queued" | "running" | "tool" | "waiting" | "settled";

const TURN_STATES: readonly string[] = ["queued", "running", "tool", "waiting", "settled"];
const BUSY: readonly string[] = ["queued", "running", "tool"];
/** How long a settled turn's draft waits for its entry before it goes (a turn that failed or went silent). */
const ORPHAN_MS = 5000;

export type LiveTurnHooks = {
  /** Builds an answer's text, the same way a shown answer's is built. */
  render: (text: string, md: unknown) => Node;
  /** A message for the chat's status line. */
  say: (text: string) => void;
  /** A request was refused for want of a session. */
  lost: () => void;
  /** The stop button went away while it had the focus: where the focus goes instead. */
  refocus: () => void;
};

export function isTurnState(v: unknown): v is TurnState {
  return typeof v === "string" && TURN_STATES.includes(v);
}

export class LiveTurns {
  private readonly doc: Document;
  /** message id → state of each turn the stream told of and that has not finished. */
  private readonly states = new Map<string, TurnState>();
  private readonly drafts = new Map<string, HTMLLIElement>();
  private readonly typing: HTMLElement;
  private readonly stopButton: HTMLButtonElement;
  /** A stop was asked and its turn has not settled yet: the button waits. */
  private stopping = false;

  constructor(
    private readonly transport: Transport,
    private readonly list: HTMLOListElement,
    private readonly hooks: LiveTurnHooks,
  ) {
    this.doc = list.ownerDocument;
    this.typing = el(this.doc, "p", { class: "tai-typing", role: "status", "aria-live": "polite" });
    this.stopButton = el(this.doc, "button", { type: "button", class: "tai-stop", hidden: true }, t("stop"));
    this.stopButton.addEventListener("click", () => void this.stop());
    list.after(el(this.doc, "div", { class: "tai-turn" }, this.typing, this.stopButton));
  }

  turn(messageId: string, state: TurnState): void {
    if (state === "settled") {
      this.states.delete(messageId);
      this.stopping = false;
      const row = this.drafts.get(messageId);
      if (row) {
        window.setTimeout(() => {
          if (this.drafts.get(messageId) === row && !this.states.has(messageId)) this.dropDraft(messageId);
        }, ORPHAN_MS);
      }
    } else this.states.set(messageId, state);
    this.paint();
  }

  draft(messageId: string, text: string, md?: unknown): void {
    if (!text) {
      this.dropDraft(messageId);
      return;
    }
    const list = this.list;
    const stick = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    let row = this.drafts.get(messageId);
    if (!row) {
      row = el(
        this.doc,
        "li",
        { class: "tai-entry tai-bot tai-draft", "aria-hidden": "true", "data-message-id": messageId },
        el(this.doc, "span", { class: "tai-who tai-sr" }, t("who.bot")),
        el(this.doc, "div", { class: "tai-bubble" }),
      );
      this.drafts.set(messageId, row);
      list.append(row);
    }
    row.querySelector(".tai-bubble")?.replaceChildren(this.hooks.render(text, md));
    if (stick) list.scrollTop = list.scrollHeight;
  }

  /**
   * An entry other than the visitor's own was shown as `row`: it finishes its turn's typing and
   * takes its draft's place, and a stopped answer says so.
   */
  answered(entry: { message_id?: string; stopped?: boolean }, row: HTMLElement): void {
    if (entry.stopped) row.append(el(this.doc, "span", { class: "tai-note tai-stopped" }, t("stopped")));
    const id = entry.message_id;
    if (!id) return;
    this.dropDraft(id);
    if (this.states.delete(id)) this.paint();
  }

  /** The socket is gone: no turn is known to run until the next stream says so. */
  lost(): void {
    this.states.clear();
    this.stopping = false;
    this.paint();
  }

  /** A new stream's backlog is in: a draft it did not answer comes back by its own frame, or not at all. */
  ready(): void {
    for (const id of [...this.drafts.keys()]) this.dropDraft(id);
  }

  /** A new conversation: nothing of the old one's turns remains. */
  clear(): void {
    this.lost();
    for (const id of [...this.drafts.keys()]) this.dropDraft(id);
  }

  private dropDraft(messageId: string): void {
    this.drafts.get(messageId)?.remove();
    this.drafts.delete(messageId);
  }

  private paint(): void {
    const busy = [...this.states.values()].some((s) => BUSY.includes(s));
    // Written only when it changes, so a turn going from running to a tool and back is not read again.
    const text = busy ? t("typing") : "";
    if (this.typing.textContent !== text) this.typing.textContent = text;
    if (!busy && !this.stopButton.hidden && this.stopButton.matches(":focus")) this.hooks.refocus();
    this.stopButton.hidden = !busy;
    // aria-disabled rather than disabled: a disabled button drops the focus, which then has nowhere to go.
    this.stopButton.setAttribute("aria-disabled", String(this.stopping));
  }

  /** Stops the running turn (or, none running yet, whatever the session's turn is). */
  private async stop(): Promise<void> {
    if (this.stopping) return;
    let running: string | null = null;
    for (const [id, s] of this.states) if (s === "running" || s === "tool") running = id;
    this.stopping = true;
    this.paint();
    try {
      const got = await this.transport.post<{ stopped?: boolean }>("stop", running ? { message_id: running } : {});
      if (got?.stopped) return;
      this.hooks.say(t("stop.none"));
    } catch (err) {
      if (err instanceof WebError && err.status === 401) this.hooks.lost();
      else this.hooks.say(t("stop.failed", { reason: err instanceof Error ? err.message : String(err) }));
    }
    this.stopping = false;
    this.paint();
  }
}
