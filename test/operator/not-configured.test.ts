import { describe, expect, it } from "vitest";
import { admin, expectNotConfigured } from "../helpers/http";

describe("operator doors without a conversations store (spec §1, §7)", () => {
  it("every door answers 501 conversations-not-configured", async () => {
    const key = await admin();
    const t = encodeURIComponent("bridge:some-route:x");
    const doors: Array<[string, string, unknown?]> = [
      ["GET", "/api/conversations/some-route/threads"],
      ["GET", "/api/conversations/some-route/messages/search?q=x"],
      ["GET", `/api/conversations/some-route/transcript?thread_id=${t}`],
      ["DELETE", `/api/conversations/some-route/thread?thread_id=${t}`],
      ["GET", `/api/conversations/some-route/thread/mode?thread_id=${t}`],
      ["PUT", "/api/conversations/some-route/thread/mode", { thread_id: "bridge:some-route:x", mode: "manual" }],
      ["POST", "/api/conversations/some-route/thread/messages", { thread_id: "bridge:some-route:x", text: "hi" }],
      ["POST", "/api/conversations/some-route/events", { address: "x", event: { event_id: "e", kind: "k", payload: {} } }],
    ];
    await expectNotConfigured(doors, key, expect);
  });
});
