/**
 * Targets end to end: an HTTP tool served by this test, called through run-tool, and
 * a streamed echo agent run, against a real `wrangler dev`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { type ToolServer, startToolServer } from "./support/tool-server";

let dev: DevServer;
let tool: ToolServer;
let base: string;
let adminKey: string;

beforeAll(async () => {
  tool = await startToolServer((kwargs) => ({ shouted: String(kwargs.message).toUpperCase(), auth: "seen" }));
  dev = await startDev({ vars: { TOOL_E2E_TOKEN: "tool-secret-value" } });
  base = dev.baseUrl;
  adminKey = (await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } })).body.data.token;
});

afterAll(async () => {
  await dev?.close();
  await tool?.stop();
});

/** Reads an SSE body into its data frames (comments such as keepalives are skipped). */
async function sseFrames(res: Response): Promise<any[]> {
  const text = await res.text();
  return text
    .split("\n\n")
    .map((block) =>
      block
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6))
        .join("\n"),
    )
    .filter(Boolean)
    .map((d) => JSON.parse(d));
}

describe("targets against a real wrangler dev", () => {
  it("declares an HTTP tool on a local server and calls it through run-tool", async () => {
    const declared = await http(base, "POST", "/api/tools-config/entries", {
      key: adminKey,
      body: {
        title: "shout",
        kind: "http",
        description: "upper-cases a message",
        url: tool.url,
        headers: { authorization: { env: "TOOL_E2E_TOKEN" } },
        input_schema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
      },
    });
    expect(declared.status).toBe(200);
    expect(JSON.stringify(declared.body)).not.toContain("tool-secret-value");
    const listed = await http(base, "GET", "/api/tools", { key: adminKey });
    expect(listed.body.data).toEqual(expect.arrayContaining(["echo", "shout"]));
    const ran = await http(base, "POST", "/api/run-tool", { key: adminKey, body: { tool_name: "shout", arguments: { message: "hello" } } });
    expect(ran).toMatchObject({ status: 200, body: { data: { shouted: "HELLO" } } });
    expect(tool.calls.at(-1)?.kwargs).toEqual({ message: "hello" });
    const invalid = await http(base, "POST", "/api/run-tool", { key: adminKey, body: { tool_name: "shout", arguments: { message: 42 } } });
    expect(invalid.status).toBe(400);
    expect(tool.calls).toHaveLength(1);
    const unknown = await http(base, "POST", "/api/run-tool", { key: adminKey, body: { tool_name: "nope", arguments: {} } });
    expect(unknown.status).toBe(404);
  });

  it("streams an echo agent run as SSE frames and refuses bridge thread ids", async () => {
    const run = (text: string, thread_id?: string) =>
      fetch(`${base}/api/agents/echo/runs`, {
        method: "POST",
        headers: { "x-api-key": adminKey, "content-type": "application/json" },
        body: JSON.stringify({ user_message: text, ...(thread_id ? { thread_id } : {}) }),
      });
    const res = await run("hi there", "e2e-thread-1");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const frames = await sseFrames(res);
    expect(frames.at(-1)).toEqual({ type: "stream.end" });
    const final = frames.find((f) => f.type === "message_final");
    expect(final).toEqual({ type: "message_final", text: "echo: hi there" });
    expect(
      frames
        .filter((f) => f.type === "message_delta")
        .map((f) => f.text)
        .join(""),
    ).toBe("echo: hi there");
    expect((await run("bridge thread", "bridge:x:y")).status).toBe(400);
  });
});
