/**
 * The thread's live turn part (src/conversations/thread/live-turn.ts) driven alone, on a clock and
 * timers the test moves: the states it walks through, the draft frames' throttle, the consoles'
 * coalesced notices, the channel's typing signal and the stop.
 */
import { describe, expect, it } from "vitest";
import {
  DRAFT_INTERVAL_MS,
  type LiveFrame,
  LiveTurns,
  TURN_NOTICE_DELAY_MS,
  TYPING_DELAY_MS,
  type Timers,
  type TurnNotice,
} from "../../../src/conversations/thread/live-turn";

/** A clock and timers that move only when the test says so. */
function manualTime() {
  let now = 1_000_000;
  let next = 0;
  const due = new Map<number, { at: number; fn: () => void }>();
  const timers: Timers = {
    set: (fn, ms) => {
      const id = ++next;
      due.set(id, { at: now + ms, fn });
      return id;
    },
    clear: (h) => void due.delete(h as number),
  };
  /** Moves time forward by `ms`, firing each timer at its instant, in order. */
  const advance = (ms: number) => {
    const end = now + ms;
    for (;;) {
      const first = [...due.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!first) break;
      due.delete(first[0]);
      now = first[1].at;
      first[1].fn();
    }
    now = end;
  };
  return { clock: { now: () => now }, timers, advance, pending: () => due.size };
}

function livePart() {
  const time = manualTime();
  const frames: Array<LiveFrame & { at: number }> = [];
  const notices: TurnNotice[][] = [];
  const live = new LiveTurns(time.clock, { page: (f) => frames.push({ ...f, at: time.clock.now() }), console: (n) => notices.push(n) }, time.timers);
  return { live, frames, notices, ...time };
}

const ref = (id: string) => ({ message_id: id, route_name: "desk", thread_id: "bridge:desk:w_1" });
const states = (frames: LiveFrame[]) => frames.filter((f) => f.type === "turn").map((f) => (f.type === "turn" ? f.state : ""));

describe("the live turn", () => {
  it("walks an agent turn with tool calls through queued, running, tool, running and settled; the draft is the text since the last tool call", () => {
    const { live, frames } = livePart();
    live.queue(ref("m1"));
    live.begin(ref("m1"));
    expect(live.view()).toEqual({ message_id: "m1", state: "queued", draft: "" });
    live.running("m1", null);
    live.event("m1", { type: "message_delta", text: "Let me look" });
    live.event("m1", { type: "tool_call_step", tool: "echo", args: {}, call_id: "c1" });
    expect(live.view()).toEqual({ message_id: "m1", state: "tool", draft: "" });
    live.event("m1", { type: "tool_result_step", tool: "echo", call_id: "c1", result: "x", is_error: false });
    live.event("m1", { type: "message_delta", text: "Found it" });
    live.event("m1", { type: "message_final", text: "Found it" });
    live.end(ref("m1"), "settled");
    expect(states(frames)).toEqual(["queued", "running", "tool", "running", "settled"]);
    // The last draft goes before the turn ends; a page never keeps the text before the tool call.
    const drafts = frames.filter((f) => f.type === "draft").map((f) => (f.type === "draft" ? f.text : ""));
    expect(drafts.at(-1)).toBe("Found it");
    expect(frames.at(-1)).toMatchObject({ type: "turn", state: "settled" });
    expect(frames.findIndex((f) => f.type === "draft" && f.text === "Found it")).toBeLessThan(frames.length - 1);
    expect(live.view()).toEqual({ message_id: "m1", state: "settled", draft: null });
    expect(live.heldCount).toBe(0);
  });

  it("a turn the mode check silences goes from queued to settled, never running", () => {
    const { live, frames } = livePart();
    live.queue(ref("m1"));
    live.begin(ref("m1"));
    live.end(ref("m1"), "settled");
    expect(states(frames)).toEqual(["queued", "settled"]);
  });

  it("a parked turn ends waiting; the next queued message shows queued", () => {
    const { live, frames } = livePart();
    live.queue(ref("m1"));
    live.begin(ref("m1"));
    live.running("m1", null);
    live.event("m1", { type: "tool_call_step", tool: "ask_user", args: {}, call_id: "c1" });
    live.end(ref("m1"), "waiting");
    expect(live.view()).toEqual({ message_id: "m1", state: "waiting", draft: null });
    expect(live.openFrames()).toEqual([{ type: "turn", message_id: "m1", state: "waiting" }]);
    live.queue(ref("m2"));
    expect(live.view()).toEqual({ message_id: "m2", state: "queued", draft: null });
    expect(states(frames)).toEqual(["queued", "running", "tool", "waiting", "queued"]);
  });

  it("sends the draft at most once per 150 ms, always the whole draft, and the last one before the turn ends", () => {
    const { live, frames, advance } = livePart();
    live.queue(ref("m1"));
    live.begin(ref("m1"));
    live.running("m1", null);
    // A chunk every 20 ms for a second.
    let text = "";
    for (let i = 0; i < 50; i++) {
      live.event("m1", { type: "message_delta", text: `w${i} ` });
      text += `w${i} `;
      advance(20);
    }
    live.event("m1", { type: "message_delta", text: "end" });
    text += "end";
    live.end(ref("m1"), "settled");
    const drafts = frames.filter((f) => f.type === "draft");
    // 1,000 ms of chunks: about one frame per window, never two inside one.
    for (let i = 1; i < drafts.length - 1; i++) expect(drafts[i].at - drafts[i - 1].at).toBeGreaterThanOrEqual(DRAFT_INTERVAL_MS);
    expect(drafts.length).toBeLessThanOrEqual(Math.ceil(1000 / DRAFT_INTERVAL_MS) + 2);
    expect(drafts.length).toBeGreaterThanOrEqual(5);
    // Each frame is a prefix of the answer (append semantics), the last one the whole of it.
    for (const d of drafts) expect(text.startsWith(d.type === "draft" ? d.text : "?")).toBe(true);
    expect(drafts.at(-1)).toMatchObject({ text });
    expect(frames.at(-1)).toMatchObject({ type: "turn", state: "settled" });
  });

  it("a page that opens mid-turn is told the turn and its draft; an idle thread tells nothing", () => {
    const { live } = livePart();
    expect(live.openFrames()).toEqual([]);
    expect(live.view()).toEqual({ message_id: null, state: "settled", draft: null });
    live.queue(ref("m1"));
    live.begin(ref("m1"));
    live.running("m1", null);
    live.event("m1", { type: "message_delta", text: "Hel" });
    live.event("m1", { type: "message_delta", text: "lo" });
    expect(live.openFrames()).toEqual([
      { type: "turn", message_id: "m1", state: "running" },
      { type: "draft", message_id: "m1", text: "Hello", md: [{ type: "paragraph", children: [{ type: "text", text: "Hello" }] }] },
    ]);
    live.end(ref("m1"), "settled");
    expect(live.openFrames()).toEqual([]);
  });

  it("tells the consoles a turn's changes coalesced per window, and nothing of a turn that starts and ends inside one", () => {
    const { live, notices, advance } = livePart();
    live.queue(ref("quick"));
    live.begin(ref("quick"));
    live.running("quick", null);
    live.end(ref("quick"), "settled");
    advance(TURN_NOTICE_DELAY_MS);
    expect(notices).toEqual([]);

    live.queue(ref("slow"));
    live.begin(ref("slow"));
    live.running("slow", null);
    advance(TURN_NOTICE_DELAY_MS);
    expect(notices).toEqual([[{ type: "turn", ...ref("slow"), state: "running" }]]);
    live.event("slow", { type: "message_delta", text: "no text in a notice" });
    live.end(ref("slow"), "settled");
    advance(TURN_NOTICE_DELAY_MS);
    expect(notices[1]).toEqual([{ type: "turn", ...ref("slow"), state: "settled" }]);
    expect(JSON.stringify(notices)).not.toContain("no text");
  });

  it("sends a channel's typing signal once the target has run a while, refreshes it while it runs and never after the turn", () => {
    const { live, advance, pending } = livePart();
    let sent = 0;
    live.queue(ref("m1"));
    live.begin(ref("m1"));
    live.running("m1", { send: () => void sent++, refreshMs: 4_500 });
    advance(TYPING_DELAY_MS - 1);
    expect(sent).toBe(0);
    advance(1);
    expect(sent).toBe(1);
    advance(4_500);
    expect(sent).toBe(2);
    live.end(ref("m1"), "settled");
    advance(60_000);
    expect(sent).toBe(2);
    expect(pending()).toBe(0);

    // An answer sooner than the delay needs no signal.
    live.queue(ref("m2"));
    live.begin(ref("m2"));
    live.running("m2", { send: () => void sent++, refreshMs: null });
    advance(100);
    live.end(ref("m2"), "settled");
    advance(60_000);
    expect(sent).toBe(2);
  });

  it("stops the running turn once: its signal aborts, later events are ignored and the draft is kept", () => {
    const { live } = livePart();
    expect(live.stop()).toBe(false);
    live.queue(ref("m1"));
    live.queue(ref("m2"));
    const signal = live.begin(ref("m1"));
    live.running("m1", null);
    live.event("m1", { type: "message_delta", text: "So far" });
    // Another message's id stops nothing; a queued turn is not a running one.
    expect(live.stop("m2")).toBe(false);
    expect(signal.aborted).toBe(false);
    expect(live.stop("m1")).toBe(true);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).name).toBe("TurnStopped");
    expect(live.stop()).toBe(false);
    live.event("m1", { type: "message_delta", text: " and more" });
    expect(live.draftOf("m1")).toBe("So far");
    live.end(ref("m1"), "settled");
    expect(live.view()).toEqual({ message_id: "m2", state: "queued", draft: null });
  });
});
