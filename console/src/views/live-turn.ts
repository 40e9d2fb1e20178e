/**
 * The open thread's turn as it happens (docs/console.md "A thread"): its state from the hub's `turn`
 * notices (ids and a state, never text), and while the agent writes, the draft read through
 * `GET …/thread/live` every half second. Polling runs only while the thread is open and its turn is
 * running or in a tool call, and stops when the turn settles. "Stop" ends the turn with
 * `POST …/thread/stop`: the agent's answer is what it had drafted.
 */
import { markdownText } from "../markdown";
import { call, path } from "../api";
import { DOORS } from "../doors";
import { fill, h } from "../dom";
import type { TurnState } from "../live";
import { can } from "../session";
import { announce, busy, errorBox } from "../ui";

interface LiveTurn {
  message_id: string | null;
  state: TurnState;
  draft: string | null;
}

const POLL_MS = 500;
const SAYS: Record<TurnState, string> = {
  queued: "queued",
  running: "the agent is writing",
  tool: "the agent is calling a tool",
  waiting: "waiting for the customer's answer",
  settled: "",
};
const STATES: readonly string[] = ["queued", "running", "tool", "waiting", "settled"];
const STOPPABLE: readonly TurnState[] = ["queued", "running", "tool"];
const POLLED: readonly TurnState[] = ["running", "tool"];

export class LiveTurnPanel {
  readonly el = h("section", { class: "live-turn", "aria-label": "Turn in progress", hidden: true });
  private route = "";
  private threadId = "";
  private state: TurnState = "settled";
  private draft: string | null = null;
  private poll: number | undefined;
  /** A read is under way; `again`: a notice came meanwhile, so its answer may be stale. */
  private reading = false;
  private again = false;
  /** Bumped when the panel leaves a thread, so a late answer is dropped. */
  private generation = 0;
  private readonly stateLine = h("p", { class: "turn-state", "aria-live": "polite" });
  private readonly draftBox = h("div", { class: "turn-draft" });
  private readonly stopButton = h("button", { type: "button", class: "danger" }, "Stop");
  private readonly err = errorBox();

  constructor(
    /** The turn settled: the transcript has its answer now. */
    private readonly onSettled: () => void,
  ) {
    this.stopButton.addEventListener("click", () => void this.stop());
    fill(this.el, this.stateLine, this.draftBox, this.stopButton, this.err.el);
  }

  /** Follows `threadId`: reads its turn once, then goes by notices. */
  open(route: string, threadId: string): void {
    this.close();
    this.route = route;
    this.threadId = threadId;
    void this.read();
  }

  close(): void {
    this.generation += 1;
    clearTimeout(this.poll);
    this.poll = undefined;
    this.reading = false;
    this.again = false;
    this.route = "";
    this.threadId = "";
    this.state = "settled";
    this.draft = null;
    this.err.clear();
    this.paint();
  }

  /** Reads the turn again (the hub's socket is back: notices may have been missed meanwhile). */
  catchUp(): void {
    if (!this.threadId) return;
    if (this.reading) this.again = true;
    else void this.read();
  }

  /** A hub notice about this thread's turn. */
  notice(state: string): void {
    if (!this.threadId || !isTurnState(state)) return;
    this.set(state, this.draft);
    if (!POLLED.includes(state)) return;
    // A read under way may answer from before this notice: it reads once more when done.
    if (this.reading) this.again = true;
    else if (this.poll === undefined) void this.read();
  }

  private set(state: TurnState, draft: string | null): void {
    const was = this.state;
    this.state = state;
    this.draft = state === "settled" ? null : draft;
    this.paint();
    if (state === "settled" && was !== "settled") this.onSettled();
  }

  /** Reads the turn; again in half a second while the agent writes. */
  private async read(): Promise<void> {
    clearTimeout(this.poll);
    this.poll = undefined;
    const generation = this.generation;
    if (!this.threadId || !can(DOORS.turnLive)) return;
    this.reading = true;
    this.again = false;
    let wait = POLL_MS;
    try {
      const got = await call<LiveTurn>("GET", path(DOORS.turnLive[1], { route_name: this.route }), { query: { thread_id: this.threadId } });
      if (generation !== this.generation) return;
      this.err.clear();
      this.set(isTurnState(got.state) ? got.state : "settled", typeof got.draft === "string" ? got.draft : null);
    } catch (e) {
      if (generation !== this.generation) return;
      // A passing failure: read again a little later while the turn is thought to run.
      this.err.show(e);
      wait = POLL_MS * 4;
    } finally {
      if (generation === this.generation) this.reading = false;
    }
    if (this.again) void this.read();
    else if (POLLED.includes(this.state)) this.poll = window.setTimeout(() => void this.read(), wait);
  }

  private paint(): void {
    const on = this.state !== "settled";
    this.el.hidden = !on;
    const says = on ? `Turn: ${SAYS[this.state]}` : "";
    if (this.stateLine.textContent !== says) this.stateLine.textContent = says;
    this.el.dataset.state = this.state;
    // Built like the answer it becomes (src/shared/markdown.ts), so the text does not jump when it lands.
    this.draftBox.replaceChildren(...(this.draft ? [markdownText(document, this.draft, "text md")] : []));
    this.draftBox.hidden = !this.draft;
    this.stopButton.hidden = !can(DOORS.turnStop) || !STOPPABLE.includes(this.state);
  }

  private async stop(): Promise<void> {
    const route = this.route;
    const threadId = this.threadId;
    if (!route || !threadId) return;
    await busy(this.stopButton, this.err, async () => {
      const got = await call<{ stopped: boolean }>("POST", path(DOORS.turnStop[1], { route_name: route }), { query: { thread_id: threadId }, body: {} });
      announce(got.stopped ? "The turn was stopped; its answer is what the agent had written." : "No turn was running.");
      if (route === this.route && threadId === this.threadId && !this.reading) await this.read();
    });
  }
}

function isTurnState(v: unknown): v is TurnState {
  return typeof v === "string" && STATES.includes(v);
}
