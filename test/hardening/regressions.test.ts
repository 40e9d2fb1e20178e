/**
 * Regressions for what the fuzz and authorization suites found (docs/security.md, "Fuzz and
 * authorization suites"). Each test is named after the behaviour it pins.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { bootstrapAdmin, callJson } from "./doors";

let ADMIN = "";
// A route name is caller text like any other: lower-case letters and digits pass its pattern.
const ROUTE = "echoedroutename7q";

beforeAll(async () => {
  ADMIN = await bootstrapAdmin();
  const r = await callJson("POST", `/api/conversations/${ROUTE}`, ADMIN, { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root" });
  expect(r.status).toBe(200);
});

describe("fuzz finding: the thread guard echoed the route name from the path", () => {
  // Every door that names a thread shares one guard (src/conversations/operator/thread-guard.ts); its refusal
  // of a thread off the route must not spell the caller's route name back into the error.
  const offRoute = encodeURIComponent("bridge:some-other-route:root/someone");
  const doors: Array<[string, string, unknown?]> = [
    ["GET", `/api/conversations/${ROUTE}/transcript?thread_id=${offRoute}`],
    ["GET", `/api/conversations/${ROUTE}/thread/mode?thread_id=${offRoute}`],
    ["PUT", `/api/conversations/${ROUTE}/thread/mode`, { thread_id: "bridge:some-other-route:root/someone", mode: "manual" }],
    ["DELETE", `/api/conversations/${ROUTE}/thread?thread_id=${offRoute}`],
    ["DELETE", `/api/conversations/never-created-route/thread?thread_id=${offRoute}`],
  ];

  it("an off-route thread_id is refused with 400 naming the rule, never the caller's route name", async () => {
    for (const [method, path, body] of doors) {
      const r = await callJson(method, path, ADMIN, body);
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.json.error, `${method} ${path}`).toBe("thread_id must be a thread of this route (starting bridge:{route_name}:)");
      expect(r.text).not.toContain(ROUTE);
      expect(r.text).not.toContain("never-created-route");
    }
  });
});

describe("fuzz finding: a declared JSON Schema pattern could freeze the isolate (ReDoS)", () => {
  // `presets:write` is not admin; with JavaScript's backtracking RegExp, `^(a+)+$` against 40
  // characters and a mismatch would run for hours. Patterns run on RE2 (linear time).
  it("checks a catastrophic pattern in linear time: a 5,000-character mismatch is refused, not hung", async () => {
    const name = `redos${Date.now()}`;
    const created = await callJson("POST", "/api/presets", ADMIN, {
      name,
      base_tool: "echo",
      description: "catastrophic pattern",
      input_schema: {
        type: "object",
        properties: { message: { type: "string", pattern: "^(a+)+$" } },
        patternProperties: { "^(x+x+)+y$": { type: "string" } },
      },
    });
    expect(created.status).toBe(200);
    const run = await callJson("POST", "/api/run-tool", ADMIN, {
      tool_name: name,
      arguments: { message: `${"a".repeat(5000)}!`, [`${"x".repeat(5000)}`]: "v" },
    });
    expect(run.status).toBe(400);
    expect(run.text).toContain("/message: pattern");
    const ok = await callJson("POST", "/api/run-tool", ADMIN, { tool_name: name, arguments: { message: "aaaa" } });
    expect(ok.status).toBe(200);
    expect(ok.json.data).toBe("aaaa");
  });

  it("refuses at declaration a pattern RE2 cannot run (backreferences, lookaround), naming the field", async () => {
    for (const pattern of ["^(a)\\1$", "^(?=a)a$", "^(?<!b)a$"]) {
      const r = await callJson("POST", "/api/presets", ADMIN, {
        name: `re2x${Date.now()}`,
        base_tool: "echo",
        description: "d",
        input_schema: { type: "object", properties: { m: { type: "string", pattern } } },
      });
      expect(r.status, pattern).toBe(400);
      expect(r.json.error).toContain("input_schema");
      expect(r.json.error).toContain("RE2");
    }
  });
});
