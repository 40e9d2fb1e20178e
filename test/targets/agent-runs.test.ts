import { describe, expect, it } from "vitest";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { parseSse } from "./helpers";

async function run(key: string, name: string, body: Record<string, unknown>) {
  const r = await call("POST", `/api/agents/${name}/runs`, { key, body });
  return r;
}

describe("POST /api/agents/{name}/runs", () => {
  it("streams the echo agent's frames in order and ends with stream.end", async () => {
    const k = await mintKey({ scopes: ["agents:read", "agent:echo"] });
    const r = await call("POST", "/api/agents/echo/runs", { key: k.key, body: { user_message: "hello", thread_id: uniq("t") } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const frames = parseSse(r.body as string);
    expect(frames).toEqual([
      { data: { type: "message_delta", text: "echo: hello" } },
      { data: { type: "message_final", text: "echo: hello" } },
      { data: { type: "stream.end" } },
    ]);
  });

  it("refuses unknown fields and bridge thread ids with 400, unknown agents with 404, missing grants with 403", async () => {
    const key = await admin();
    expect((await run(key, "echo", { user_message: "x", extra: 1 })).status).toBe(400);
    const bridge = await run(key, "echo", { user_message: "x", thread_id: "bridge:route:someone" });
    expect(bridge.status).toBe(400);
    expect(bridge.body.error).toMatch(/thread_id/);
    expect((await run(key, "echo", {})).status).toBe(400);
    expect((await run(key, uniq("ghost"), { user_message: "x" })).status).toBe(404);
    const noRun = await mintKey({ scopes: ["agents:read"] });
    expect((await run(noRun.key, "echo", { user_message: "x" })).status).toBe(403);
    const noTag = await mintKey({ scopes: ["agent:echo"] });
    expect((await run(noTag.key, "echo", { user_message: "x" })).status).toBe(403);
  });
});
