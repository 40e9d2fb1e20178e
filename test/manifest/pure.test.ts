/** Pure parts of MCP servers, API tools and sub-MCP: names, selection, mapping, requests. */
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { buildApiRequest } from "../../src/targets/tools/api-tool-call";
import { ApiToolDeclaration } from "../../src/targets/tools/api-tool-store";
import { mapCallResult } from "../../src/mcp/call";
import { classifyMcpError } from "../../src/mcp/client";
import { admitsTool } from "../../src/mcp/declarations";
import { selectTools } from "../../src/mcp/listing";
import { isToolName, remoteNameRefusal, splitMcpToolName } from "../../src/shared/tool-names";
import { mapLimited } from "../../src/mcp/config";
import { toCallResult } from "../../src/sub-mcp/server";

describe("MCP tool names", () => {
  it("are <server>.<tool> within the run-scope bound; other names hold no dot", () => {
    expect(splitMcpToolName("github.create_issue")).toEqual({ server: "github", tool: "create_issue" });
    expect(splitMcpToolName("echo")).toBeNull();
    expect(splitMcpToolName("a.b.c")).toBeNull();
    expect(splitMcpToolName(`${"s".repeat(40)}.${"t".repeat(30)}`)).toBeNull();
    expect(isToolName("echo") && isToolName("srv.add")).toBe(true);
    expect(isToolName(".add") || isToolName("srv.") || isToolName("a b")).toBe(false);
    expect(remoteNameRefusal("srv", "add")).toBeNull();
    expect(remoteNameRefusal("srv", "has.dot")).toContain("characters");
    expect(remoteNameRefusal("s".repeat(40), "t".repeat(30))).toContain("64");
  });
});

describe("listing selection", () => {
  const tool = (name: string, inputSchema: Record<string, unknown> = { type: "object" }) => ({ name, inputSchema }) as any;
  it("admits by include/exclude, skips bad names, duplicates, unusable schemas and the excess, keeping order", () => {
    expect(admitsTool({ include: [], exclude: ["b"] }, "a")).toBe(true);
    expect(admitsTool({ include: ["a"], exclude: [] }, "b")).toBe(false);
    const r = selectTools(
      "srv",
      { include: [], exclude: ["x"] },
      [
        tool("a"),
        tool("x"),
        tool("a"),
        tool("b.c"),
        tool("bad", { type: "object", properties: { p: { type: "string", pattern: "(a)\\1" } } }),
        tool("c"),
        tool("d"),
      ],
      2,
    );
    expect(r.tools.map((t) => t.remote_name)).toEqual(["a", "c"]);
    expect(r.skipped.map((s) => s.name)).toEqual(["a", "b.c", "bad", "d"]);
    expect(r.skipped[3].reason).toBe("over MCP_MAX_TOOLS_PER_SERVER");
  });
  it("summarises a long skipped list", () => {
    const many = Array.from({ length: 150 }, (_, i) => tool(`t.${i}`));
    const r = selectTools("srv", { include: [], exclude: [] }, many, 10);
    expect(r.skipped).toHaveLength(100);
    expect(r.skipped[99]).toEqual({ name: "...", reason: "51 more tools skipped" });
  });
});

describe("MCP call results", () => {
  it("maps structured content, text, other content and isError (never the server's text)", () => {
    expect(
      mapCallResult("s.t", {
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      }),
    ).toEqual({ ok: true, value: "a\nb" });
    expect(mapCallResult("s.t", { content: [], structuredContent: { x: 1 } })).toEqual({ ok: true, value: { x: 1 } });
    expect(mapCallResult("s.t", { content: [{ type: "image", data: "aA==", mimeType: "image/png" }] })).toEqual({
      ok: true,
      value: { content: [{ type: "image", data: "aA==", mimeType: "image/png" }] },
    });
    expect(mapCallResult("s.t", { isError: true, content: [{ type: "text", text: "SECRET" }] })).toEqual({
      ok: false,
      kind: "tool_error",
      message: "MCP tool s.t answered an error",
    });
  });
  it("classifies session failures by status or JSON-RPC code, never by message text", () => {
    expect(classifyMcpError(new StreamableHTTPError(401, "SECRET body"), "MCP server x")).toEqual({
      kind: "http_status",
      message: "MCP server x answered HTTP 401",
    });
    expect(classifyMcpError(new StreamableHTTPError(-1, "SECRET"), "L").kind).toBe("protocol");
    expect(classifyMcpError(new McpError(ErrorCode.MethodNotFound, "SECRET"), "L")).toEqual({ kind: "protocol", message: "L answered JSON-RPC error -32601" });
    expect(classifyMcpError(new McpError(ErrorCode.RequestTimeout, "x"), "L").kind).toBe("timeout");
    expect(classifyMcpError(new SyntaxError("SECRET"), "L").message).toBe("L answered a message that is not valid MCP");
    expect(classifyMcpError(new TypeError("fetch failed SECRET"), "L")).toEqual({ kind: "transport", message: "L could not be reached" });
  });
  it("turns a dispatch into a sub-MCP tool result", () => {
    expect(toCallResult({ ok: true, value: "hi" })).toEqual({ content: [{ type: "text", text: "hi" }] });
    expect(toCallResult({ ok: true, value: { a: 1 } })).toEqual({ content: [{ type: "text", text: '{"a":1}' }], structuredContent: { a: 1 } });
    expect(toCallResult({ ok: true, value: [1] })).toEqual({ content: [{ type: "text", text: "[1]" }] });
    expect(toCallResult({ ok: false, kind: "timeout", message: "m" })).toEqual({ isError: true, content: [{ type: "text", text: "m" }] });
  });
});

describe("API tool requests", () => {
  const tool = ApiToolDeclaration.parse({
    title: "t",
    method: "GET",
    url: "https://api.example/items/{id}/sub",
    parameters: [
      { name: "id", in: "path", required: true },
      { name: "q", in: "query" },
      { name: "filter", in: "query" },
      { name: "x-h", in: "header" },
    ],
    input_schema: { type: "object" },
  });
  it("percent-encodes path parameters, repeats array queries, sends objects as JSON, sets header parameters", () => {
    const r = buildApiRequest(tool, { id: "a/../b c", q: [1, "two"], filter: { k: 1 }, "x-h": 5, extra: "ignored" }, { authorization: "x" });
    expect(r).toEqual({
      url: "https://api.example/items/a%2F..%2Fb%20c/sub?q=1&q=two&filter=%7B%22k%22%3A1%7D",
      method: "GET",
      headers: { authorization: "x", "x-h": "5", accept: "application/json" },
      body: null,
    });
  });
  it("refuses a missing or non-scalar path parameter and a header value with CR/LF, naming the parameter only", () => {
    expect(buildApiRequest(tool, {}, {})).toEqual({ error: "path parameter id must be a string, number or boolean" });
    expect(buildApiRequest(tool, { id: { a: 1 } }, {})).toEqual({ error: "path parameter id must be a string, number or boolean" });
    expect(buildApiRequest(tool, { id: 1, "x-h": "a\r\nSECRET" }, {})).toEqual({ error: "header parameter x-h must not contain CR, LF or NUL" });
  });
  it("checks declarations: placeholders match path parameters, no body on GET", () => {
    const base = { title: "t", method: "GET", url: "https://a.example/{x}", input_schema: { type: "object" } };
    expect(ApiToolDeclaration.safeParse({ ...base, parameters: [] }).success).toBe(false);
    expect(ApiToolDeclaration.safeParse({ ...base, parameters: [{ name: "x", in: "path", required: true }] }).success).toBe(true);
    expect(ApiToolDeclaration.safeParse({ ...base, parameters: [{ name: "x", in: "path", required: true }], body: "json" }).success).toBe(false);
    expect(ApiToolDeclaration.safeParse({ ...base, url: "ftp://a.example/{x}", parameters: [{ name: "x", in: "path", required: true }] }).success).toBe(false);
  });
});

describe("mapLimited", () => {
  it("keeps order and never runs more than the limit at once", async () => {
    let running = 0;
    let peak = 0;
    const out = await mapLimited([1, 2, 3, 4, 5, 6], 2, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return n * 10;
    });
    expect(out).toEqual([10, 20, 30, 40, 50, 60]);
    expect(peak).toBe(2);
  });
});
