/**
 * Parking and answering add no D1 statement to the per-message path (the rule every turn keeps):
 * a message whose turn parks on ask_user costs the door its read of the new route (the isolate's
 * first; the caller's key is cached already), the next message that answers it costs nothing, and
 * the thread nothing either time. The interaction's object writes the listing row in its own
 * alarm, off the turn's path (not counted here: it is another object).
 */
import { describe, expect, it } from "vitest";
import { apiThreadId } from "../../src/shared/thread-id";
import { D1Counter, countThread, countedFetch } from "../helpers/d1-count";
import { admin } from "../helpers/http";
import { askRoute, pendingOf } from "./helpers";

const json = async (body: unknown) => ({ headers: { "content-type": "application/json", "x-api-key": await admin() }, body: JSON.stringify(body) });

describe("D1 on the per-message path of an interaction", () => {
  it("the parking message and the answering message: the route's first read, then nothing; nothing in the thread", async () => {
    const route = await askRoute();
    const threadId = apiThreadId(route.name, "root", "d1");
    for (const [text, answer] of [
      ["Count me?", "Count me?\n\n1. Yes\n2. No"],
      ["yes", "You chose: Yes"],
    ]) {
      const counter = new D1Counter();
      const restore = await countThread(counter, threadId);
      try {
        const r = await countedFetch(
          counter,
          "POST",
          `/api/conversations/${route.name}/messages`,
          await json({ external_user_id: "d1", text, wait_seconds: 10 }),
        );
        expect(r.status, r.text).toBe(200);
        expect(r.json.data.answer).toBe(answer);
        await counter.quiet();
      } finally {
        await restore();
      }
      // The route's first read in this isolate misses its cache; after it, the route is cached.
      const door = text === "Count me?" ? 1 : 0;
      expect(counter.summary(), `${text}:\n${counter.describe()}`).toEqual({
        worker: { roundTrips: door, statements: door },
        thread: { roundTrips: 0, statements: 0 },
        roundTrips: door,
        statements: door,
      });
      if (text === "Count me?") await pendingOf(threadId);
    }
  });
});
