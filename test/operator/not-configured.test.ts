import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { admin } from "../helpers/http";

describe("operator doors without a conversations store (spec §1, §7)", () => {
  it("every door answers 501 conversations-not-configured", async () => {
    const app = createApp();
    const key = await admin();
    const noStore = { ...env, CONVERSATIONS_STORE_URL: "" };
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
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
    for (const [method, path, body] of doors) {
      const res = await app.fetch(
        new Request(`https://bridge.test${path}`, { method, headers: { "x-api-key": key, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined }),
        noStore,
        ctx,
      );
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(await res.json()).toMatchObject({ code: "conversations-not-configured" });
    }
  });
});
