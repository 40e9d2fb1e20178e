/** Unit tests of the pure policy functions behind targets. */
import { describe, expect, it } from "vitest";
import { memoryWindow, parseToolArguments, toolMessageContent } from "../../src/targets/agents/llm";
import { toAnswer } from "../../src/targets/agents/events";
import { functionAliases } from "../../src/targets/agents/function-names";
import { clientSafeFailure, sseComment, sseFrame } from "../../src/targets/agents/sse";
import { idleExpiry, parseStoredMessage } from "../../src/shared/agent-memory";
import { EnvRefError, REDACTED, redactHeaders, resolveHeaders } from "../../src/outbound/env-refs";
import { ANY_OBJECT_SCHEMA, ANY_SCHEMA, checkAgainstSchema, inputSchemaSchema, jsonSchemaSchema } from "../../src/platform/json-schema";
import { MAX_RESPONSE_BYTES, callJsonEndpoint } from "../../src/outbound/fetch";
import { carryForward, mergeKwargs, parseVersionSegment, schemaWithoutFixed, versionView } from "../../src/targets/presets/model";
import { withTimeout } from "../../src/platform/timeout";
import { fakeFetch } from "../helpers/network";
import type { Env } from "../../src/platform/env";

describe("presets", () => {
  it("fixed kwargs always win over the caller's", () => {
    expect(mergeKwargs({ a: 1, b: 2 }, { b: 3, c: 4 })).toEqual({ a: 1, b: 3, c: 4 });
    expect(mergeKwargs({ b: { nested: true } }, { b: null })).toEqual({ b: null });
  });

  it("carries omitted fields forward and lets null clear a schema", () => {
    const current = {
      base_tool: "echo",
      description: "d",
      fixed_kwargs: { a: 1 },
      input_schema: { type: "object" },
      output_schema: { type: "string" },
      state_binding: null,
      extensions: [],
    };
    expect(carryForward(current, {})).toEqual(current);
    expect(carryForward(current, { description: "e", input_schema: null })).toEqual({ ...current, description: "e", input_schema: null });
    expect(carryForward(current, { fixed_kwargs: {} }).fixed_kwargs).toEqual({});
  });

  it("hides fixed kwargs from the schema callers see, top level only", () => {
    const schema = { type: "object", properties: { a: { type: "string" }, b: { type: "number" } }, required: ["a", "b"] };
    expect(schemaWithoutFixed(schema, { a: "x" })).toEqual({ type: "object", properties: { b: { type: "number" } }, required: ["b"] });
    expect(schemaWithoutFixed(schema, {})).toBe(schema);
    expect(schema.required).toEqual(["a", "b"]); // not mutated
  });

  it("parses a version segment: integers only", () => {
    expect(parseVersionSegment("3")).toBe(3);
    expect(parseVersionSegment("-1")).toBe(-1);
    for (const bad of ["", "1.0", "1e3", "abc", " 1", "0x10", "9".repeat(16)]) expect(parseVersionSegment(bad), bad).toBeNull();
  });

  it("computes is_current at read", () => {
    const v = {
      version: 2,
      body: { base_tool: "echo", description: "", fixed_kwargs: {}, input_schema: null, output_schema: null, state_binding: null, extensions: [] },
      created_at: "t",
      tags: [],
    };
    expect(versionView(v, 2).is_current).toBe(true);
    expect(versionView(v, 1).is_current).toBe(false);
  });
});

describe("JSON Schema checks", () => {
  const schema = { type: "object", properties: { n: { type: "integer" }, tag: { const: "SCHEMA-CONST" } }, required: ["n"], additionalProperties: false };

  it("names locations and keywords, never instance values", () => {
    const r = checkAgainstSchema(schema, { n: "SECRET-1", extra: "SECRET-2", tag: "SECRET-3" });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const text = r.problems.join(" ");
    expect(text).toContain("/n: type");
    expect(text).not.toMatch(/SECRET/);
    expect(checkAgainstSchema(schema, {})).toEqual({ ok: false, problems: ['/: required property "n"'] });
    expect(checkAgainstSchema(schema, { n: 1 })).toEqual({ ok: true });
  });

  it("evaluates the shared frozen defaults (a tool declared without schemas), repeatedly", () => {
    for (let i = 0; i < 2; i++) {
      expect(checkAgainstSchema(ANY_OBJECT_SCHEMA, { any: "thing" })).toEqual({ ok: true });
      expect(checkAgainstSchema(ANY_OBJECT_SCHEMA, [1]).ok).toBe(false);
      expect(checkAgainstSchema(ANY_SCHEMA, "x")).toEqual({ ok: true });
    }
    expect(Object.isFrozen(ANY_OBJECT_SCHEMA)).toBe(true);
  });

  it("reports an unevaluable schema as a problem instead of throwing", () => {
    expect(checkAgainstSchema({ $ref: "#/$defs/missing" }, {})).toEqual({ ok: false, problems: ["the schema could not be evaluated"] });
  });

  it("refuses declared schemas with unknown types or dangling refs; input schemas must describe objects", () => {
    expect(jsonSchemaSchema.safeParse({ type: "object" }).success).toBe(true);
    expect(jsonSchemaSchema.safeParse({ properties: { a: { type: "strng" } } }).success).toBe(false);
    expect(jsonSchemaSchema.safeParse({ $ref: "#/nowhere" }).success).toBe(false);
    expect(inputSchemaSchema.safeParse({ type: "array" }).success).toBe(false);
    expect(inputSchemaSchema.safeParse({ properties: {} }).success).toBe(true);
  });
});

describe("env references", () => {
  it("redacts literal header values and shows references", () => {
    expect(redactHeaders({ a: "literal", b: { env: "VAR" } })).toEqual({ a: REDACTED, b: { env: "VAR" } });
  });

  it("resolves references at call time and names an unset variable, not a value", () => {
    const env = {
      VAR: "v",
      EMPTY: "",
      BINDING: {},
      SECRET_REFERENCE_ALLOWLIST: "VAR,NOPE,EMPTY",
      SECRET_REFERENCE_ORIGINS: JSON.stringify({ VAR: ["https://t.example"], NOPE: ["https://t.example"], EMPTY: ["https://t.example"] }),
    } as unknown as Env;
    expect(resolveHeaders(env, { a: "x", b: { env: "VAR" } }, "https://t.example/run")).toEqual({ a: "x", b: "v" });
    for (const missing of ["NOPE", "EMPTY", "BINDING"]) {
      expect(() => resolveHeaders(env, { b: { env: missing } }, "https://t.example/run")).toThrow(EnvRefError);
    }
  });
});

describe("the llm loop's helpers", () => {
  const u = (c: string) => ({ role: "user" as const, content: c });
  const a = (c: string | null) => ({ role: "assistant" as const, content: c });
  const t = { role: "tool" as const, content: "r", tool_call_id: "x" };

  it("windows memory to the newest messages, starting at a user message", () => {
    const msgs = [u("1"), a("2"), u("3"), a(null), t, a("6")];
    expect(memoryWindow(msgs, 10)).toEqual(msgs);
    expect(memoryWindow(msgs, 4)).toEqual([u("3"), a(null), t, a("6")]);
    expect(memoryWindow(msgs, 3)).toEqual([]);
    expect(memoryWindow([], 5)).toEqual([]);
  });

  it("accepts only JSON objects as tool arguments (empty means {})", () => {
    expect(parseToolArguments('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseToolArguments("")).toEqual({ ok: true, value: {} });
    for (const bad of ["[1]", "1", "null", "{", '"s"']) expect(parseToolArguments(bad), bad).toEqual({ ok: false });
  });

  it("renders tool results for the model", () => {
    expect(toolMessageContent("plain", false)).toBe("plain");
    expect(toolMessageContent({ a: 1 }, false)).toBe('{"a":1}');
    expect(toolMessageContent(undefined, false)).toBe("null");
    expect(toolMessageContent("nope", true)).toBe('{"error":"nope"}');
  });

  it("treats null, empty and whitespace answers as silence", () => {
    expect(toAnswer(null)).toBeNull();
    expect(toAnswer(undefined)).toBeNull();
    expect(toAnswer(" \n\t")).toBeNull();
    expect(toAnswer(" hi ")).toBe(" hi ");
  });
});

describe("SSE framing", () => {
  it("writes data-only frames and comments", () => {
    expect(sseFrame({ type: "message_delta", text: "a\nb" })).toBe('data: {"type":"message_delta","text":"a\\nb"}\n\n');
    expect(sseFrame({ type: "stream.end" })).toBe('data: {"type":"stream.end"}\n\n');
    expect(sseComment("keepalive")).toBe(": keepalive\n\n");
  });

  it("never shows a denial's internal reason to the caller", () => {
    expect(clientSafeFailure({ ok: false, kind: "denied", message: "execution key is disabled" })).toBe("run denied: the key may not run this agent");
    expect(clientSafeFailure({ ok: false, kind: "agent_error", message: "agent endpoint answered HTTP 500" })).toBe("agent endpoint answered HTTP 500");
  });
});

describe("checkpoints", () => {
  it("computes the idle expiry", () => {
    expect(idleExpiry(1000, null)).toBeNull();
    expect(idleExpiry(1000, 1)).toBe(61_000);
    expect(idleExpiry(0, 0.5)).toBe(30_000);
  });

  it("refuses corrupt stored messages loudly", () => {
    expect(parseStoredMessage('{"role":"user","content":"x"}')).toEqual({ role: "user", content: "x" });
    expect(() => parseStoredMessage("{")).toThrow();
    expect(() => parseStoredMessage('{"role":"wizard","content":"x"}')).toThrow();
  });
});

describe("deadlines and outbound calls", () => {
  it("returns the value when work finishes in time, a timeout otherwise", async () => {
    expect(await withTimeout(1000, async () => 7)).toEqual({ ok: true, value: 7 });
    const aborted: boolean[] = [];
    const r = await withTimeout(
      5,
      (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => (aborted.push(true), reject(new Error("aborted"))))),
    );
    expect(r).toEqual({ ok: false, timedOut: true });
    expect(aborted).toEqual([true]);
  });

  it("refuses an oversized response", async () => {
    const big = "x".repeat(MAX_RESPONSE_BYTES + 1);
    const r = await callJsonEndpoint(fakeFetch(() => new Response(JSON.stringify(big))).fetch, {
      label: "tool endpoint",
      url: "https://x.example/",
      method: "POST",
      headers: {},
      body: {},
      timeoutMs: 5000,
    });
    expect(r).toEqual({ ok: false, kind: "too_large", message: `tool endpoint answered more than ${MAX_RESPONSE_BYTES} bytes` });
  });
});

describe("functionAliases (an llm agent's function names)", () => {
  it("keeps dot-less names and gives an MCP tool a dot-free alias that meets none of them", () => {
    expect([...functionAliases(["echo", "srv.add"])]).toEqual([
      ["echo", "echo"],
      ["srv__add", "srv.add"],
    ]);
    // A configured tool already named like the alias keeps its name; the MCP tool gets a suffix.
    expect([...functionAliases(["srv.add", "srv__add"])]).toEqual([
      ["srv__add", "srv__add"],
      ["srv__add_2", "srv.add"],
    ]);
    expect(functionAliases(["a.b", "a__b_2", "a__b"]).get("a__b_3")).toBe("a.b");
  });

  it("stays within 64 characters of the function-name alphabet", () => {
    const long = `${"s".repeat(31)}.${"t".repeat(32)}`;
    const aliases = functionAliases([long, `${"s".repeat(31)}__${"t".repeat(31)}`]);
    for (const alias of aliases.keys()) expect(alias).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect([...aliases.values()]).toContain(long);
    expect(aliases.size).toBe(2);
  });

  it("lists a repeated name once", () => {
    expect([...functionAliases(["x.y", "x.y", "echo", "echo"])]).toEqual([
      ["echo", "echo"],
      ["x__y", "x.y"],
    ]);
  });
});
