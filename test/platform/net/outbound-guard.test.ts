/**
 * The outbound address guard at the doors and before each send: route
 * `callback_url`, HTTP tool `url`, http agent `url` and llm `base_url` are refused at
 * declaration (400 naming the field, never the URL), and a URL stored while
 * OUTBOUND_ALLOW_PRIVATE_HOSTS=true is never sent to once the setting no longer allows it.
 * The workers test bindings leave the setting unset (false); declarations that must store a
 * private URL go through `callWith` with the setting on.
 */
import { describe, expect, it } from "vitest";
import { runAgent } from "../../../src/targets/agents/run";
import { echoKey, readRecord, send } from "../../helpers/bridge";
import { fakeFetch, fakeNetwork, json } from "../../helpers/network";
import { admin, call, mintKey, uniq } from "../../helpers/http";
import { eventually } from "../../helpers/threads";
import { callWith, testContext } from "../../targets/helpers";

const ALLOW = { OUTBOUND_ALLOW_PRIVATE_HOSTS: "true" };

/** Loopback in the spellings a guard must see through; none of these substrings may appear in an answer. */
const LOOPBACK_SPELLINGS: Array<[string, string[]]> = [
  ["127.0.0.1", ["127.0.0.1"]],
  ["2130706433", ["2130706433", "127.0.0.1"]],
  ["0x7f000001", ["0x7f000001", "127.0.0.1"]],
  ["0177.0.0.1", ["0177", "127.0.0.1"]],
  ["127.1", ["127.1"]],
  ["[::1]", ["::1"]],
  ["[::ffff:127.0.0.1]", ["ffff", "127.0.0.1", "7f00"]],
  ["[::ffff:7f00:1]", ["ffff", "7f00"]],
];

function expectRefusal(r: { status: number; body: any }, field: string, kind: string, hidden: string[]) {
  expect(r.status).toBe(400);
  const error = String(r.body.error);
  expect(error).toContain(`${field}: the host is `);
  expect(error).toContain(kind);
  expect(error).toContain("OUTBOUND_ALLOW_PRIVATE_HOSTS");
  for (const h of hidden) expect(JSON.stringify(r.body)).not.toContain(h);
}

async function createRouteAs(vars: Record<string, unknown> | null, body: Record<string, unknown>) {
  const name = uniq("guard").toLowerCase();
  const opts = { key: await admin(), body };
  const r = vars ? await callWith(vars, "POST", `/api/conversations/${name}`, opts) : await call("POST", `/api/conversations/${name}`, opts);
  return { name, ...r };
}

async function echoRouteBody(callback_url: string) {
  const k = await echoKey();
  return { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, callback_url };
}

async function declareTool(vars: Record<string, unknown> | null, url: string) {
  const title = uniq("guarded");
  const opts = { key: await admin(), body: { title, kind: "http", url } };
  const r = vars ? await callWith(vars, "POST", "/api/tools-config/entries", opts) : await call("POST", "/api/tools-config/entries", opts);
  return { title, ...r };
}

async function declareAgent(vars: Record<string, unknown> | null, body: Record<string, unknown>) {
  const title = uniq("guarded-agent");
  const opts = { key: await admin(), body: { title, ...body } };
  const r = vars ? await callWith(vars, "POST", "/api/agents-config/entries", opts) : await call("POST", "/api/agents-config/entries", opts);
  return { title, ...r };
}

describe("conversation callbacks", () => {
  it("refuses a callback_url on a loopback spelling (127.0.0.1, 2130706433, 0x7f000001, 0177.0.0.1, 127.1, [::1], [::ffff:127.0.0.1], [::ffff:7f00:1]) at route create", async () => {
    for (const [host, hidden] of LOOPBACK_SPELLINGS) {
      const r = await createRouteAs(null, await echoRouteBody(`https://${host}/hooks/x`));
      expectRefusal(r, "callback_url", "loopback", hidden);
    }
  });

  it("refuses metadata.google.internal and 169.254.169.254 as a callback_url, even with OUTBOUND_ALLOW_PRIVATE_HOSTS=true", async () => {
    for (const host of ["metadata.google.internal", "169.254.169.254"]) {
      for (const vars of [null, ALLOW]) {
        const r = await createRouteAs(vars, await echoRouteBody(`https://${host}/computeMetadata/v1/`));
        expect(r.status).toBe(400);
        expect(r.body.error).toBe("invalid body: callback_url: the host is a cloud metadata service (refused even with OUTBOUND_ALLOW_PRIVATE_HOSTS=true)");
      }
    }
  });

  it("refuses localhost, *.localhost, *.local, *.internal, 0.0.0.0, RFC 1918 and link-local callback hosts at route create", async () => {
    for (const host of [
      "localhost",
      "hooks.localhost",
      "printer.local",
      "svc.internal",
      "0.0.0.0",
      "10.0.0.1",
      "192.168.1.20",
      "172.16.5.4",
      "100.64.1.1",
      "[fd00::1]",
      "[fe80::1]",
    ]) {
      const r = await createRouteAs(null, await echoRouteBody(`https://${host}/h`));
      expect(r.status, host).toBe(400);
      expect(r.body.error).toMatch(/^invalid body: callback_url: the host is .*OUTBOUND_ALLOW_PRIVATE_HOSTS=true$/);
    }
  });

  it("accepts a private callback_url when OUTBOUND_ALLOW_PRIVATE_HOSTS=true, and a public one without it", async () => {
    const local = await createRouteAs(ALLOW, await echoRouteBody("https://127.0.0.1:8443/hooks/x"));
    expect(local.status).toBe(200);
    const pub = await createRouteAs(null, await echoRouteBody("https://hooks.example.com/bridge"));
    expect(pub.status).toBe(200);
  });

  it("refuses at send time a stored callback whose host became refused: the attempt fails with the guard's reason and nothing is sent", async () => {
    const calls = fakeNetwork(() => new Response(null, { status: 204 }));
    // Declared while the setting allowed it; the thread object runs with the default (false).
    const route = await createRouteAs(ALLOW, await echoRouteBody("https://127.0.0.1:8443/hooks/x"));
    expect(route.status).toBe(200);
    const a = await send(route.name, { external_user_id: "u", text: "hello" });
    expect(a.status).toBe(202);
    const rec = await eventually(
      () => readRecord(route.name, a.body.data.message_id),
      (x) => x.body.data?.attempts === 1,
    );
    expect(rec.body.data).toMatchObject({ status: "pending_delivery", answer_status: "answered", attempts: 1 });
    expect(rec.body.data.error).toBe(
      "callback refused by the outbound address guard: the host is a loopback address; private and local hosts are refused unless OUTBOUND_ALLOW_PRIVATE_HOSTS=true",
    );
    expect(calls).toHaveLength(0);
  });
});

describe("HTTP tools", () => {
  it("refuses a tool url on a loopback spelling (127.0.0.1, 2130706433, 0x7f000001, 0177.0.0.1, 127.1, [::1], [::ffff:127.0.0.1], [::ffff:7f00:1]) at declaration", async () => {
    for (const [host, hidden] of LOOPBACK_SPELLINGS) {
      const r = await declareTool(null, `http://${host}:8080/run`);
      expectRefusal(r, "url", "loopback", hidden);
    }
  });

  it("refuses metadata.google.internal and 169.254.169.254 as a tool url", async () => {
    for (const url of ["http://metadata.google.internal/computeMetadata/v1/", "http://169.254.169.254/latest/meta-data/"]) {
      const r = await declareTool(ALLOW, url);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe("invalid body: url: the host is a cloud metadata service (refused even with OUTBOUND_ALLOW_PRIVATE_HOSTS=true)");
    }
  });

  it("refuses at send time a stored tool url whose host became refused: run-tool fails as a transport failure and nothing is sent", async () => {
    const calls = fakeNetwork(() => json({ reached: true }));
    const tool = await declareTool(ALLOW, "http://10.0.0.5:9000/run");
    expect(tool.status).toBe(200);
    const r = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: tool.title, arguments: {} } });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({
      error:
        "tool endpoint refused by the outbound address guard: the host is a private (RFC 1918) address; private and local hosts are refused unless OUTBOUND_ALLOW_PRIVATE_HOSTS=true",
      code: "tool-transport",
    });
    expect(calls).toHaveLength(0);
    // With the setting on, the same stored tool is called.
    const allowed = await callWith(ALLOW, "POST", "/api/run-tool", { key: await admin(), body: { tool_name: tool.title, arguments: {} } });
    expect(allowed.status).toBe(200);
    expect(allowed.body.data).toEqual({ reached: true });
    expect(calls.map((c) => c.url)).toEqual(["http://10.0.0.5:9000/run"]);
  });

  it("fails a bridge turn cleanly when its tool's stored url became refused, with the guard's reason in the record's error", async () => {
    fakeNetwork(() => json({ reached: true }));
    const tool = await declareTool(ALLOW, "https://[::1]:9443/run");
    const key = await mintKey({ scopes: [`tool:${tool.title}`] });
    const route = await createRouteAs(null, { door: "api", target_kind: "tool", target_name: tool.title, execution_key: key.user_id });
    expect(route.status).toBe(200);
    const r = await send(route.name, { external_user_id: "u", text: "hi", wait_seconds: 10 });
    expect(r.status).toBe(200);
    const rec = await readRecord(route.name, r.body.data.message_id);
    expect(rec.body.data.answer_status).toBe("error");
    expect(rec.body.data.error).toContain("tool endpoint refused by the outbound address guard: the host is a loopback address");
    expect(rec.body.data.error).toContain("OUTBOUND_ALLOW_PRIVATE_HOSTS=true");
    expect(rec.body.data.error).not.toMatch(/\n\s+at /); // no stack trace
  });
});

describe("agents", () => {
  it("refuses an http agent url and an llm base_url on loopback spellings at declaration", async () => {
    for (const [host, hidden] of LOOPBACK_SPELLINGS) {
      const http = await declareAgent(null, { kind: "http", config: { url: `http://${host}:7000/agent` } });
      expectRefusal(http, "config.url", "loopback", hidden);
      const llm = await declareAgent(null, { kind: "llm", config: { base_url: `http://${host}:11434/v1`, model: "m" } });
      expectRefusal(llm, "config.base_url", "loopback", hidden);
    }
  });

  it("refuses metadata.google.internal and 169.254.169.254 as an agent url or llm base_url", async () => {
    for (const host of ["metadata.google.internal", "169.254.169.254"]) {
      const http = await declareAgent(ALLOW, { kind: "http", config: { url: `http://${host}/agent` } });
      expect(http.body.error).toBe("invalid body: config.url: the host is a cloud metadata service (refused even with OUTBOUND_ALLOW_PRIVATE_HOSTS=true)");
      const llm = await declareAgent(ALLOW, { kind: "llm", config: { base_url: `http://${host}/v1`, model: "m" } });
      expect(llm.body.error).toBe("invalid body: config.base_url: the host is a cloud metadata service (refused even with OUTBOUND_ALLOW_PRIVATE_HOSTS=true)");
    }
  });

  it("accepts public agent endpoints without the setting", async () => {
    expect((await declareAgent(null, { kind: "http", config: { url: "https://agent.example/turn" } })).status).toBe(200);
    expect((await declareAgent(null, { kind: "llm", config: { base_url: "https://llm.example/v1", model: "m" } })).status).toBe(200);
  });

  it("refuses at send time a stored http agent url whose host became refused", async () => {
    const agent = await declareAgent(ALLOW, { kind: "http", config: { url: "http://192.168.1.50:7000/agent" } });
    expect(agent.status).toBe(200);
    const edge = fakeFetch(() => json({ text: "reached" }));
    const r = await runAgent(testContext({ fetch: edge.fetch }), agent.title, { thread_id: uniq("t"), user_message: "x" }, {});
    expect(r).toEqual({
      ok: false,
      kind: "agent_error",
      message:
        "agent endpoint refused by the outbound address guard: the host is a private (RFC 1918) address; private and local hosts are refused unless OUTBOUND_ALLOW_PRIVATE_HOSTS=true",
    });
    expect(edge.calls).toHaveLength(0);
    const allowed = await runAgent(testContext({ fetch: edge.fetch, vars: ALLOW }), agent.title, { thread_id: uniq("t"), user_message: "x" }, {});
    expect(allowed).toEqual({ ok: true, text: "reached" });
  });

  it("refuses at send time a stored llm base_url whose host became refused", async () => {
    const agent = await declareAgent(ALLOW, { kind: "llm", config: { base_url: "http://localhost:11434/v1", model: "m" } });
    expect(agent.status).toBe(200);
    const edge = fakeFetch(() => json({ choices: [{ message: { content: "reached" } }] }));
    const r = await runAgent(testContext({ fetch: edge.fetch }), agent.title, { thread_id: uniq("t"), user_message: "x" }, {});
    expect(r).toEqual({
      ok: false,
      kind: "agent_error",
      message:
        "LLM endpoint refused by the outbound address guard: the host is a local name (localhost); private and local hosts are refused unless OUTBOUND_ALLOW_PRIVATE_HOSTS=true",
    });
    expect(edge.calls).toHaveLength(0);
    const allowed = await runAgent(testContext({ fetch: edge.fetch, vars: ALLOW }), agent.title, { thread_id: uniq("t"), user_message: "x" }, {});
    expect(allowed).toEqual({ ok: true, text: "reached" });
    expect(edge.calls.map((c) => c.url)).toEqual(["http://localhost:11434/v1/chat/completions"]);
  });
});
