import { beforeEach, describe, expect, it } from "vitest";
import { answerOnly, fakeNetwork, json } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { callWith } from "./helpers";

const SECRET = "door-secret-9f2c";
const LITERAL = "literal-header-value-77";
const seen: Array<{ headers: Record<string, string>; body: unknown }> = [];

// The two tool endpoints these doors call; any other outbound request fails the fetch.
beforeEach(() => {
  fakeNetwork(
    answerOnly({
      "POST https://tools.example/doors/ok": (request, text) => {
        const body = JSON.parse(text);
        seen.push({ headers: Object.fromEntries(request.headers), body });
        return json({ received: body });
      },
      "POST https://tools.example/doors/fail": () => json({ leaked: SECRET }, 502),
    }),
  );
});

async function declare(body: Record<string, unknown>) {
  return call("POST", "/api/tools-config/entries", { key: await admin(), body: { kind: "http", ...body } });
}

describe("declaring HTTP tools", () => {
  it("creates, then replaces; reads show env references and redact literal values", async () => {
    const title = uniq("decl");
    const first = await declare({ title, url: "https://tools.example/doors/ok", headers: { authorization: { env: "TOOL_SECRET" }, "x-literal": LITERAL } });
    expect(first.status).toBe(200);
    expect(first.body.data.created).toBe(true);
    expect(first.body.data.tool).toMatchObject({
      title,
      kind: "http",
      method: "POST",
      timeout_seconds: 30,
      headers: { authorization: { env: "TOOL_SECRET" }, "x-literal": "<redacted>" },
      input_schema: null,
    });
    expect(JSON.stringify(first.body)).not.toContain(LITERAL);

    const again = await declare({ title, url: "https://tools.example/doors/ok", description: "v2", timeout_seconds: 5 });
    expect(again.body.data).toMatchObject({ created: false, tool: { description: "v2", timeout_seconds: 5, headers: {} } });
  });

  it("never stores or echoes a resolved secret", async () => {
    const title = uniq("decl");
    await declare({ title, url: "https://tools.example/doors/fail", headers: { authorization: { env: "TOOL_SECRET" } } });
    const run = await callWith({ TOOL_SECRET: SECRET }, "POST", "/api/run-tool", { key: await admin(), body: { tool_name: title, arguments: {} } });
    expect(run.status).toBe(500);
    expect(run.body).toEqual({ error: "tool endpoint answered HTTP 502", code: "tool-http-status" });
    for (const path of ["/api/tools", "/api/tools-schema", `/api/tools/${title}/schema`]) {
      const r = await callWith({ TOOL_SECRET: SECRET }, "GET", path, { key: await admin() });
      expect(r.status).toBe(200);
      expect(r.text).not.toContain(SECRET);
    }
  });

  it("validates the body, naming fields and never echoing values", async () => {
    const bad = await declare({ title: "bad title!", url: "https://user:pw-SECRET@tools.example/", headers: { "bad header": "x" }, timeout_seconds: 0 });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/title/);
    expect(bad.body.error).toMatch(/url/);
    expect(bad.body.error).not.toContain("pw-SECRET");
    const unknownField = await declare({ title: uniq("decl"), url: "https://tools.example/", surprise: true });
    expect(unknownField.status).toBe(400);
    const badSchema = await declare({ title: uniq("decl"), url: "https://tools.example/", input_schema: { type: "strng" } });
    expect(badSchema.status).toBe(400);
    expect(badSchema.body.error).toMatch(/input_schema/);
    const nonObject = await declare({ title: uniq("decl"), url: "https://tools.example/", input_schema: { type: "string" } });
    expect(nonObject.status).toBe(400);
  });

  it("refuses a built-in's name (409) and removes declarations (404 after)", async () => {
    expect((await declare({ title: "echo", url: "https://tools.example/" })).status).toBe(409);
    const key = await admin();
    expect((await call("DELETE", "/api/tools-config/entries/echo", { key })).status).toBe(409);
    const title = uniq("decl");
    await declare({ title, url: "https://tools.example/" });
    expect(await call("DELETE", `/api/tools-config/entries/${title}`, { key })).toMatchObject({ status: 200, body: { data: { removed: true, title } } });
    expect((await call("DELETE", `/api/tools-config/entries/${title}`, { key })).status).toBe(404);
    expect((await call("GET", `/api/tools/${title}/schema`, { key })).status).toBe(404);
  });

  it("is admin only", async () => {
    const k = await mintKey({ scopes: ["tools"] });
    expect(
      (await call("POST", "/api/tools-config/entries", { key: k.key, body: { title: uniq("d"), kind: "http", url: "https://tools.example/" } })).status,
    ).toBe(403);
    expect((await call("DELETE", "/api/tools-config/entries/whatever", { key: k.key })).status).toBe(403);
  });
});

describe("registry reads", () => {
  it("lists sorted names including built-ins and declared tools", async () => {
    const title = uniq("listed");
    await declare({ title, url: "https://tools.example/", input_schema: { type: "object", properties: { q: { type: "string" } } } });
    const k = await mintKey({ scopes: ["tools:read"] });
    const r = await call("GET", "/api/tools", { key: k.key });
    expect(r.status).toBe(200);
    expect(r.body.data).toContain("echo");
    expect(r.body.data).toContain("set_conversation_mode");
    expect(r.body.data).toContain(title);
    expect([...r.body.data].sort()).toEqual(r.body.data);

    const one = await call("GET", `/api/tools/${title}/schema`, { key: k.key });
    expect(one.body.data).toEqual({ input: { type: "object", properties: { q: { type: "string" } } }, output: {}, description: "" });
    const echo = await call("GET", "/api/tools/echo/schema", { key: k.key });
    expect(echo.body.data.input).toMatchObject({ required: ["message"] });
    expect(echo.body.data.output).toEqual({ type: "string" });

    const all = await call("GET", "/api/tools-schema", { key: k.key });
    expect(Object.keys(all.body.data)).toEqual(r.body.data);
    expect(all.body.data[title]).toEqual(one.body.data);
  });

  it("needs the tools read grant; unknown tool schema is 404", async () => {
    const k = await mintKey({ scopes: ["agents:read"] });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(403);
    expect((await call("GET", `/api/tools/${uniq("none")}/schema`, { key: await admin() })).status).toBe(404);
  });
});

describe("POST /api/run-tool", () => {
  it("runs a declared tool through the network edge and answers its result", async () => {
    const title = uniq("run");
    await declare({ title, url: "https://tools.example/doors/ok", headers: { "x-token": { env: "TOOL_SECRET" } } });
    const r = await callWith({ TOOL_SECRET: SECRET }, "POST", "/api/run-tool", { key: await admin(), body: { tool_name: title, arguments: { a: 1 } } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ data: { received: { a: 1 } } });
    expect(seen.at(-1)).toMatchObject({ headers: { "x-token": SECRET }, body: { a: 1 } });
  });

  it("runs built-ins; arguments default to {}", async () => {
    const key = await admin();
    expect(await call("POST", "/api/run-tool", { key, body: { tool_name: "echo", arguments: { message: "hi" } } })).toMatchObject({
      status: 200,
      body: { data: "hi" },
    });
    const noArgs = await call("POST", "/api/run-tool", { key, body: { tool_name: "echo" } });
    expect(noArgs.status).toBe(400);
    expect(noArgs.body.error).toContain('required property "message"');
    const outside = await call("POST", "/api/run-tool", { key, body: { tool_name: "set_conversation_mode", arguments: { mode: "manual" } } });
    expect(outside.status).toBe(500);
    expect(outside.body.code).toBe("tool-error");
  });

  it("answers 404 for an unknown tool and 403 for a non-admin", async () => {
    expect(await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: uniq("ghost"), arguments: {} } })).toMatchObject({
      status: 404,
      body: { error: "tool not found" },
    });
    const k = await mintKey({ scopes: ["tools"] });
    expect((await call("POST", "/api/run-tool", { key: k.key, body: { tool_name: "echo", arguments: { message: "x" } } })).status).toBe(403);
  });
});
