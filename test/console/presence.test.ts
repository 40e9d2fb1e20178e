/** Presence frames between consoles (pure): what a console may send, its lifetime and its budget. */
import { describe, expect, it } from "vitest";
import {
  PRESENCE_FRAMES_PER_WINDOW,
  PRESENCE_FRAME_MAX_CHARS,
  PRESENCE_TTL_MS,
  PRESENCE_WINDOW_MS,
  parsePresenceFrame,
  presenceEntry,
  presenceMark,
  spendPresenceBudget,
} from "../../src/console/presence";

const frame = (f: Record<string, unknown>) => JSON.stringify(f);

describe("parsePresenceFrame", () => {
  it("takes a thread of the hub's route, or a person thread, with a known state", () => {
    expect(parsePresenceFrame(frame({ type: "presence", thread_id: "bridge:support:root/alice", state: "viewing" }), "support")).toEqual({
      thread_id: "bridge:support:root/alice",
      state: "viewing",
    });
    expect(parsePresenceFrame(frame({ type: "presence", thread_id: "bridge:@person:p-1", state: "typing" }), "support")?.state).toBe("typing");
    expect(parsePresenceFrame(frame({ type: "presence", thread_id: "bridge:support:777", state: "left" }), "support")?.state).toBe("left");
  });

  it("refuses anything else: another route's thread, an unknown state, extra fields, too long, not JSON", () => {
    const refused = [
      frame({ type: "presence", thread_id: "bridge:billing:root/alice", state: "viewing" }),
      frame({ type: "presence", thread_id: "not-a-thread", state: "viewing" }),
      frame({ type: "presence", thread_id: "bridge:support:a", state: "shouting" }),
      frame({ type: "presence", thread_id: "bridge:support:a", state: "viewing", user_id: "someone-else" }),
      frame({ type: "presence", thread_id: "bridge:support:a\u0000b", state: "viewing" }),
      frame({ type: "presence", thread_id: `bridge:support:${"x".repeat(600)}`, state: "viewing" }),
      frame({ type: "notices", thread_id: "bridge:support:a", state: "viewing" }),
      `{"type":"presence","thread_id":"bridge:support:a","state":"viewing"}${" ".repeat(PRESENCE_FRAME_MAX_CHARS)}`,
      "[]",
      "null",
      "pong",
    ];
    for (const text of refused) expect(parsePresenceFrame(text, "support"), text.slice(0, 80)).toBeNull();
  });
});

describe("presence lifetime and budget", () => {
  it("holds viewing and typing for their TTL; left keeps nothing", () => {
    expect(presenceMark("t", "viewing", 1000)).toEqual({ thread_id: "t", state: "viewing", until: 1000 + PRESENCE_TTL_MS.viewing });
    expect(presenceMark("t", "typing", 1000)?.until).toBe(1000 + PRESENCE_TTL_MS.typing);
    expect(presenceMark("t", "left", 1000)).toBeNull();
    expect(presenceEntry("support", "sam", "t", "left", 0)).toEqual({
      route_name: "support",
      thread_id: "t",
      user_id: "sam",
      state: "left",
      until: new Date(0).toISOString(),
    });
  });

  it("lets PRESENCE_FRAMES_PER_WINDOW frames through per window, then drops until the next window", () => {
    let budget: Parameters<typeof spendPresenceBudget>[0];
    let passed = 0;
    for (let i = 0; i < PRESENCE_FRAMES_PER_WINDOW + 5; i++) {
      const r = spendPresenceBudget(budget, 5000 + i);
      budget = r.budget;
      if (r.ok) passed += 1;
    }
    expect(passed).toBe(PRESENCE_FRAMES_PER_WINDOW);
    expect(spendPresenceBudget(budget, 5000 + PRESENCE_WINDOW_MS).ok).toBe(true);
  });
});
