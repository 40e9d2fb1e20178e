/**
 * The thread's live turn (docs/web-channel-client.md "Live turns"): which turn runs, where it
 * stands and what its run has written so far, held in memory only (never stored, no SQL).
 *
 * The state IS the turn: every turn the loop takes ends in `end`, whatever its outcome (answered,
 * silent, failed, stopped, silenced by manual mode, parked on a question), so a page's "typing…"
 * and a channel's typing signal stop with the turn and can never outlive it.
 *
 * - `queue`: a record was accepted and waits for its turn (`queued`).
 * - `begin`: the loop takes the turn; its stop controller is made here. The state stays `queued`
 *   until the target runs (`running`): a turn the mode check silences never shows as running.
 * - `event`: the run's agent events: `message_delta` chunks build the draft, `tool_call_step`
 *   starts a tool call (`tool`) and empties the draft (the answer is the text after the run's last
 *   tool call), `tool_result_step` ends it (`running`).
 * - `end`: the turn settled (`settled`), or parked on a question (`waiting`).
 *
 * What it tells: the visitor's open pages get a `turn` frame on every change and the draft at most
 * once per DRAFT_INTERVAL_MS (the last one always before the turn ends, so before its answer's
 * entry); the route's consoles get the state changes coalesced per TURN_NOTICE_DELAY_MS, and a turn
 * that starts and ends inside one window is not announced at all (the listing push tells of it); a
 * channel that can show typing gets its signal once the target has run TYPING_DELAY_MS, refreshed
 * while it runs.
 */
import { type AgentEvent, TurnStopped } from "../../targets/agents/events";
import { parseMarkdown } from "../../shared/markdown";
import type { Clock } from "../../platform/clock";
import { consoleHubStub } from "../../console/rpc";
import type { Env } from "../../platform/env";
import { type LiveTurnView, TYPING_STATES, type TurnState } from "../model/live";
import type { WebFrame } from "../model/web";

/** At most one draft frame per this many ms (the last one always goes before the turn ends). */
export const DRAFT_INTERVAL_MS = 150;
/** State changes reach the consoles coalesced over this window. */
export const TURN_NOTICE_DELAY_MS = 250;
/** A channel's typing signal waits this long into the run: an answer that comes sooner needs none. */
export const TYPING_DELAY_MS = 500;

/** The timers the part schedules with (tests drive their own). */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const systemTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** A turn: its record's id and where it belongs. */
export interface TurnRef {
  message_id: string;
  route_name: string;
  thread_id: string;
}

/** The frames a page gets about its turn. */
export type LiveFrame = Extract<WebFrame, { type: "turn" | "draft" }>;

/** A state change as a console hears it: ids and the state, never text. */
export interface TurnNotice extends TurnRef {
  type: "turn";
  state: TurnState;
}

/** Where the part tells what changed. */
export interface LiveSinks {
  /** The visitor's open pages on this thread (src/conversations/thread/web-visitor.ts `pushLive`). */
  page(frame: LiveFrame): void;
  /** The consoles of the notices' routes (fire-and-forget; see `announceTurns`). */
  console(notices: TurnNotice[]): void;
}

/** A channel's typing signal for the running turn: `send` never throws and is never awaited. */
export interface TypingSignal {
  send(): void;
  /** Sent again this often while the turn runs (null: once). */
  refreshMs: number | null;
}

interface Active {
  ref: TurnRef;
  state: TurnState;
  draft: string;
  controller: AbortController;
  /** The draft the pages were last sent, and when. */
  sent: string;
  sentAt: number | null;
  draftTimer: unknown;
  typing: TypingSignal | null;
  typingTimer: unknown;
}

export class LiveTurns {
  /** Records accepted here whose turn has not started, oldest first. */
  private readonly queued = new Map<string, TurnRef>();
  private active: Active | null = null;
  /** The last turn that ended (the live door's answer when nothing runs). */
  private last: { message_id: string; state: TurnState } | null = null;
  /** Console notices waiting for their window, latest per message. */
  private readonly notices = new Map<string, TurnNotice>();
  /** Messages the consoles heard a not-ended state of: their end is announced too. */
  private readonly announced = new Set<string>();
  private noticeTimer: unknown = null;

  constructor(
    private readonly clock: Clock,
    private readonly sinks: LiveSinks,
    private readonly timers: Timers = systemTimers,
  ) {}

  /** Turns held: queued ones and the running one (zero once the thread is idle). */
  get heldCount(): number {
    return this.queued.size + (this.active ? 1 : 0);
  }

  /** A record was accepted: its turn waits. */
  queue(ref: TurnRef): void {
    this.queued.set(ref.message_id, ref);
    this.change(ref, "queued");
  }

  /** Forgets queued turns that are no longer queued (the turn loop's sweep of what it holds). */
  keepOnly(queued: (messageId: string) => boolean): void {
    for (const id of this.queued.keys()) if (!queued(id)) this.queued.delete(id);
  }

  /** The loop takes `ref`'s turn: answers the signal a stop aborts. */
  begin(ref: TurnRef): AbortSignal {
    this.queued.delete(ref.message_id);
    if (this.active) this.quiet(this.active);
    const controller = new AbortController();
    this.active = { ref, state: "queued", draft: "", controller, sent: "", sentAt: null, draftTimer: null, typing: null, typingTimer: null };
    return controller.signal;
  }

  /** The turn's target runs now; `typing` is its channel's signal, when the channel has one. */
  running(messageId: string, typing: TypingSignal | null): void {
    const a = this.activeFor(messageId);
    if (!a || a.state !== "queued") return;
    this.change(a.ref, "running");
    if (!typing) return;
    a.typing = typing;
    a.typingTimer = this.timers.set(() => this.type(a), TYPING_DELAY_MS);
  }

  /** One of the run's agent events (ignored once the turn was stopped). */
  event(messageId: string, e: AgentEvent): void {
    const a = this.activeFor(messageId);
    if (!a) return;
    switch (e.type) {
      case "message_delta":
        if (!e.text) return;
        a.draft += e.text;
        this.draftChanged(a);
        return;
      case "tool_call_step":
        a.draft = "";
        this.draftChanged(a);
        if (a.state !== "tool") this.change(a.ref, "tool");
        return;
      case "tool_result_step":
        if (a.state === "tool") this.change(a.ref, "running");
        return;
      default:
        return;
    }
  }

  /** The turn's draft as it stands (its answer when it was stopped). */
  draftOf(messageId: string): string {
    return this.active?.ref.message_id === messageId ? this.active.draft : "";
  }

  /**
   * The turn ended: the pages get its last draft, then `state` (`waiting` when it parked on a
   * question). Called for every turn the loop settles, run or not.
   */
  end(ref: TurnRef, state: "settled" | "waiting"): void {
    this.queued.delete(ref.message_id);
    const a = this.active?.ref.message_id === ref.message_id ? this.active : null;
    if (a) {
      this.quiet(a);
      this.sendDraft(a);
      this.active = null;
    }
    this.last = { message_id: ref.message_id, state };
    this.change(ref, state);
  }

  /** Stops the running turn (only `messageId`'s, when given); false when none runs or it is stopping already. */
  stop(messageId?: string | null): boolean {
    const a = this.active;
    if (!a || (messageId && a.ref.message_id !== messageId) || a.controller.signal.aborted) return false;
    a.controller.abort(new TurnStopped());
    this.timers.clear(a.typingTimer);
    a.typingTimer = null;
    return true;
  }

  /** The live door's answer: the running turn, else the oldest queued, else the last that ended. */
  view(): LiveTurnView {
    const a = this.active;
    if (a) return { message_id: a.ref.message_id, state: a.state, draft: a.draft };
    const next = this.queued.values().next();
    if (!next.done) return { message_id: next.value.message_id, state: "queued", draft: null };
    return { message_id: this.last?.message_id ?? null, state: this.last?.state ?? "settled", draft: null };
  }

  /** What a page that just opened its stream is told after `ready`: a turn not settled, and its draft. */
  openFrames(): LiveFrame[] {
    const v = this.view();
    if (v.message_id === null || v.state === "settled") return [];
    const frames: LiveFrame[] = [{ type: "turn", message_id: v.message_id, state: v.state }];
    if (v.draft) frames.push({ type: "draft", message_id: v.message_id, text: v.draft, md: parseMarkdown(v.draft) });
    return frames;
  }

  private activeFor(messageId: string): Active | null {
    const a = this.active;
    return a && a.ref.message_id === messageId && !a.controller.signal.aborted ? a : null;
  }

  private change(ref: TurnRef, state: TurnState): void {
    if (this.active?.ref.message_id === ref.message_id) this.active.state = state;
    this.sinks.page({ type: "turn", message_id: ref.message_id, state });
    this.notices.set(ref.message_id, { type: "turn", ...ref, state });
    this.noticeTimer ??= this.timers.set(() => this.flushNotices(), TURN_NOTICE_DELAY_MS);
  }

  private flushNotices(): void {
    this.noticeTimer = null;
    const out: TurnNotice[] = [];
    for (const n of this.notices.values()) {
      const ended = n.state === "settled" || n.state === "waiting";
      if (!ended) {
        this.announced.add(n.message_id);
        out.push(n);
      } else if (this.announced.delete(n.message_id)) out.push(n);
    }
    this.notices.clear();
    if (out.length) this.sinks.console(out);
  }

  /** The draft changed: sent now when the last frame is old enough, else when it is (carrying the latest). */
  private draftChanged(a: Active): void {
    if (a.draftTimer !== null) return;
    const wait = a.sentAt === null ? 0 : a.sentAt + DRAFT_INTERVAL_MS - this.clock.now();
    if (wait <= 0) {
      this.sendDraft(a);
      return;
    }
    a.draftTimer = this.timers.set(() => {
      a.draftTimer = null;
      if (this.active === a) this.sendDraft(a);
    }, wait);
  }

  private sendDraft(a: Active): void {
    if (a.draft === a.sent) return;
    a.sent = a.draft;
    a.sentAt = this.clock.now();
    this.sinks.page({ type: "draft", message_id: a.ref.message_id, text: a.draft, md: parseMarkdown(a.draft) });
  }

  /** Sends the channel's typing signal while the turn still runs, and schedules the next one. */
  private type(a: Active): void {
    a.typingTimer = null;
    if (this.active !== a || a.controller.signal.aborted || !TYPING_STATES.has(a.state) || !a.typing) return;
    a.typing.send();
    if (a.typing.refreshMs) a.typingTimer = this.timers.set(() => this.type(a), a.typing.refreshMs);
  }

  /** Cancels a turn's pending timers (its draft frame and typing signal). */
  private quiet(a: Active): void {
    this.timers.clear(a.draftTimer);
    a.draftTimer = null;
    this.timers.clear(a.typingTimer);
    a.typingTimer = null;
  }
}

/**
 * Tells each route's consoles of its turns' changes (docs/console.md "Live updates"): one ConsoleHub
 * call per route, never awaited by the turn, any failure swallowed (a console missing a notice
 * catches up at its next read). No D1 statement is involved.
 */
export function announceTurns(env: Env, notices: TurnNotice[]): void {
  const byRoute = new Map<string, TurnNotice[]>();
  for (const n of notices) byRoute.set(n.route_name, [...(byRoute.get(n.route_name) ?? []), n]);
  for (const [route, list] of byRoute) {
    try {
      void consoleHubStub(env, route)
        .notify(list)
        .catch(() => 0);
    } catch {
      // A missing binding or a stub that cannot be made: the consoles just hear nothing.
    }
  }
}
