/**
 * Input bounds: free-form JSON is bounded wherever it enters or
 * comes back, identifiers arrive intact or not at all, and every body is strict.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, checkJsonBounds } from "../../../src/platform/http/bounded-json";
import { findLoneSurrogate, isIntactIdentifier } from "../../../src/platform/http/identifiers";
import { TURN_ERROR_TEXT } from "../../../src/conversations/model/record";
import { parseToolArguments } from "../../../src/targets/agents/llm";
import { createRoute, echoKey, readRecord, send } from "../../helpers/bridge";
import { fakeNetwork } from "../../helpers/network";
import { BOOTSTRAP_TOKEN, admin, call, mintKey, uniq } from "../../helpers/http";
import { listingCaughtUp } from "../../helpers/listing";

/** `levels` nested objects around `inner`, as JSON text (JSON.stringify would need a deep value). */
function deepJson(levels: number, inner = "1"): string {
  return '{"a":'.repeat(levels) + inner + "}".repeat(levels);
}

function deepValue(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let at = root;
  for (let i = 1; i < levels; i++) {
    const next: Record<string, unknown> = {};
    at.a = next;
    at = next;
  }
  return root;
}

/** POSTs a hand-written JSON body (deep or non-finite values cannot go through JSON.stringify). */
async function postRaw(path: string, rawBody: string, key?: string) {
  return call("POST", path, { key: key ?? (await admin()), rawBody, headers: { "content-type": "application/json" } });
}

const json = (v: string) => new Response(v, { headers: { "content-type": "application/json" } });

async function declareTool(title: string, url: string) {
  const r = await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title, kind: "http", description: "bounds test tool", url } });
  if (r.status !== 200) throw new Error(`tool declare failed ${r.status} ${JSON.stringify(r.body)}`);
}

describe("free-form JSON is bounded", () => {
  it("checks depth, finiteness and bytes iteratively, so a 100,000-level value is refused rather than overflowing", () => {
    expect(checkJsonBounds(deepValue(MAX_JSON_DEPTH), 1e6)).toBeNull();
    expect(checkJsonBounds(deepValue(MAX_JSON_DEPTH + 1), 1e6)).toBe(`must nest at most ${MAX_JSON_DEPTH} levels`);
    expect(checkJsonBounds(JSON.parse(deepJson(100_000)), 1e6)).toBe(`must nest at most ${MAX_JSON_DEPTH} levels`);
    expect(checkJsonBounds(JSON.parse('{"n":[1e400]}'), 1e6)).toBe("numbers must be finite");
    expect(checkJsonBounds({ s: "é".repeat(10) }, 20)).toBe("must be at most 20 bytes as compact JSON");
    expect(checkJsonBounds([1, "x", null, { b: true }], 100)).toBeNull();
  });

  it("refuses TemplatedText kwargs nested 10,000 levels at route create, so the route never breaks", async () => {
    const k = await echoKey();
    const name = uniq("deep-kwargs").toLowerCase();
    const head = `{"door":"api","target_kind":"tool","target_name":"echo","execution_key":"${k.user_id}","payload_expr":{"content":"{message: (\\"{{prefix}}\\" + .message)}","kwargs":{"prefix":"> ","deep":`;
    const refused = await postRaw(`/api/conversations/${name}`, `${head}${deepJson(10_000)}}}}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("payload_expr.kwargs");
    expect(refused.body.error).toContain(`${MAX_JSON_DEPTH} levels`);
    expect((await call("GET", `/api/conversations/${name}`, { key: await admin() })).status).toBe(404);

    // One level past the bound is refused too; at the bound the route is created and answers.
    // (kwargs itself is the first level.)
    const over = await postRaw(`/api/conversations/${name}`, `${head}${deepJson(MAX_JSON_DEPTH)}}}}`);
    expect(over.status).toBe(400);
    const at = await postRaw(`/api/conversations/${name}`, `${head}${deepJson(MAX_JSON_DEPTH - 1)}}}}`);
    expect(at.status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const answer = await send(name, { external_user_id: "u", text: "hi", wait_seconds: 10 });
      expect(answer.body.data).toMatchObject({ status: "answered", answer: "> hi" });
    }

    const infinite = await postRaw(`/api/conversations/${name}`, `${head}1e400}}}`);
    expect(infinite.status).toBe(400);
    expect(infinite.body.error).toContain("payload_expr.kwargs: numbers must be finite");
  });

  it("refuses over-deep or non-finite preset fixed_kwargs, input_schema and output_schema", async () => {
    const preset = uniq("deep-preset");
    const cases: Array<[string, string, string]> = [
      ["fixed_kwargs", deepJson(10_000), `${MAX_JSON_DEPTH} levels`],
      ["fixed_kwargs", '{"n":1e400}', "finite"],
      ["input_schema", `{"type":"object","properties":${deepJson(10_000, "{}")}}`, `${MAX_JSON_DEPTH} levels`],
      ["output_schema", deepJson(10_000, "{}"), `${MAX_JSON_DEPTH} levels`],
    ];
    for (const [field, value, bound] of cases) {
      const create = await postRaw("/api/presets", `{"name":"${preset}","base_tool":"echo","${field}":${value}}`);
      expect(create.status, field).toBe(400);
      expect(create.body.error).toContain(field);
      expect(create.body.error).toContain(bound);
    }
    expect((await call("POST", "/api/presets", { key: await admin(), body: { name: preset, base_tool: "echo", fixed_kwargs: { tone: "calm" } } })).status).toBe(
      200,
    );
    const version = await postRaw(`/api/presets/${preset}/versions`, `{"fixed_kwargs":${deepJson(10_000)}}`);
    expect(version.status).toBe(400);
    expect(version.body.error).toContain("fixed_kwargs");
  });

  it("refuses over-deep or non-finite run-tool arguments", async () => {
    const deep = await postRaw("/api/run-tool", `{"tool_name":"echo","arguments":{"message":"x","deep":${deepJson(10_000)}}}`);
    expect(deep.status).toBe(400);
    expect(deep.body.error).toContain(`arguments: must nest at most ${MAX_JSON_DEPTH} levels`);
    const infinite = await postRaw("/api/run-tool", '{"tool_name":"echo","arguments":{"message":"x","n":-1e400}}');
    expect(infinite.status).toBe(400);
    expect(infinite.body.error).toContain("arguments: numbers must be finite");
    const fine = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: "echo", arguments: { message: "ok", deep: deepValue(10) } } });
    expect(fine).toMatchObject({ status: 200, body: { data: "ok" } });
  });

  it("refuses an over-deep tool input_schema; agent and tool config take no free-form value at all", async () => {
    const tool = await postRaw(
      "/api/tools-config/entries",
      `{"title":"${uniq("deep-schema")}","kind":"http","url":"https://tools.example/x","input_schema":{"type":"object","properties":${deepJson(10_000, "{}")}}}`,
    );
    expect(tool.status).toBe(400);
    expect(tool.body.error).toContain("input_schema");
    expect(tool.body.error).toContain(`${MAX_JSON_DEPTH} levels`);
    const agent = await postRaw(
      "/api/agents-config/entries",
      `{"title":"${uniq("deep-agent")}","kind":"http","config":{"url":"https://agents.example/x","extra":${deepJson(10_000)}}}`,
    );
    expect(agent.status).toBe(400);
    expect(agent.body.error).toContain("config");
  });

  it("an over-deep or non-finite tool result fails the dispatch and is the turn's error outcome, never a bare 500", async () => {
    const title = uniq("deep-result");
    await declareTool(title, "https://tools.example/deep-result");
    let answer = deepJson(10_000, '"x"');
    fakeNetwork(() => json(answer));

    const run = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: title, arguments: {} } });
    expect(run.status).toBe(500);
    expect(run.body).toEqual({ error: `tool endpoint answered JSON out of bounds: must nest at most ${MAX_JSON_DEPTH} levels`, code: "tool-error" });

    const k = await mintKey({ scopes: [`tool:${title}`] });
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id });
    const res = await send(r.name, { external_user_id: "u", text: "hi", wait_seconds: 10 });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: "error", answer: TURN_ERROR_TEXT });
    const rec = await readRecord(r.name, res.body.data.message_id);
    expect(rec.body.data.error).toContain(`must nest at most ${MAX_JSON_DEPTH} levels`);

    answer = '{"n":1e400}';
    const inf = await send(r.name, { external_user_id: "u", text: "again", wait_seconds: 10 });
    expect(inf.body.data).toMatchObject({ status: "error", answer: TURN_ERROR_TEXT });
    expect((await readRecord(r.name, inf.body.data.message_id)).body.data.error).toContain("numbers must be finite");
  });

  it("an over-deep http agent answer is the turn's error outcome", async () => {
    const title = uniq("deep-agent");
    const declared = await call("POST", "/api/agents-config/entries", {
      key: await admin(),
      body: { title, kind: "http", config: { url: "https://agents.example/deep" } },
    });
    expect(declared.status).toBe(200);
    fakeNetwork(() => json(`{"text":"hello","extra":${deepJson(10_000)}}`));
    const k = await mintKey({ scopes: [`agent:${title}`] });
    const r = await createRoute({ door: "api", target_kind: "agent", target_name: title, execution_key: k.user_id });
    const res = await send(r.name, { external_user_id: "u", text: "hi", wait_seconds: 10 });
    expect(res.body.data).toMatchObject({ status: "error", answer: TURN_ERROR_TEXT });
    expect((await readRecord(r.name, res.body.data.message_id)).body.data.error).toContain(
      `agent endpoint answered JSON out of bounds: must nest at most ${MAX_JSON_DEPTH} levels`,
    );
  });

  it("an llm tool call's over-deep arguments go back to the model as an error, not to the tool", () => {
    expect(parseToolArguments(deepJson(10_000))).toEqual({ ok: false, problem: `tool arguments must nest at most ${MAX_JSON_DEPTH} levels` });
    expect(parseToolArguments('{"a":{"b":1}}')).toEqual({ ok: true, value: { a: { b: 1 } } });
  });
});

describe("identifiers arrive intact", () => {
  it("judges identifiers: control characters (C0, DEL, C1) and lone surrogates are out, everything else is in", () => {
    for (const bad of ["a\u0000", "a\u001f", "a\u007f", "a\u0085", "a\ud800", "\udc00a", "a\ud800\ud800"])
      expect(isIntactIdentifier(bad), JSON.stringify(bad)).toBe(false);
    for (const good of ["alice", "zoë", "😀", "a b", "+15550001111", "bridge:r:root/u"]) expect(isIntactIdentifier(good), good).toBe(true);
    expect(findLoneSurrogate({ a: [1, { b: "x\ud800" }] })).toBe("a.1.b");
    expect(findLoneSurrogate({ "\udc00": 1 })).toBe("a key");
    expect(findLoneSurrogate({ ok: "😀", list: ["\ud83d\ude00"] })).toBeNull();
  });

  it("refuses a lone surrogate or NUL in external_user_id and event address, so the 202's thread_id is the stored one", async () => {
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    for (const id of ["ada\u0000", "ada\ud800", "\udfffada", "ada\u0085", "ad\u007fa", "a\u0007da"]) {
      const res = await send(r.name, { external_user_id: id, text: "x" });
      expect(res.status, JSON.stringify(id)).toBe(400);
      expect(res.body.error).toContain("external_user_id");
      const ev = await call("POST", `/api/conversations/${r.name}/events`, {
        key: await admin(),
        body: { address: id, event: { event_id: "e-1", kind: "k", payload: {} } },
      });
      expect(ev.status, JSON.stringify(id)).toBe(400);
      expect(ev.body.error).toContain("address");
    }
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM threads WHERE route_name = ?").bind(r.name).first("n")).toBe(0);

    // What is accepted is stored byte for byte as answered: the thread index, the record, and the event door agree.
    const accepted = await send(r.name, { external_user_id: " zoë 😀 ", text: "x" });
    expect(accepted.status).toBe(202);
    const threadId = accepted.body.data.thread_id as string;
    expect(threadId).toBe(`bridge:${r.name}:root/zoë 😀`);
    await listingCaughtUp(threadId);
    const stored = await env.DB.prepare("SELECT thread_id FROM threads WHERE route_name = ?").bind(r.name).all<{ thread_id: string }>();
    expect(stored.results.map((row) => row.thread_id)).toEqual([threadId]);
    const rec = await readRecord(r.name, accepted.body.data.message_id);
    expect(rec.body.data).toMatchObject({ thread_id: threadId, client_address: "zoë 😀" });
    const ev = await call("POST", `/api/conversations/${r.name}/events`, {
      key: await admin(),
      body: { address: "zoë 😀", event: { event_id: "e-2", kind: "k", payload: {} } },
    });
    expect(ev.status).toBe(202);
    expect(ev.body.data.thread_id).toBe(threadId);
  });

  it("the thread listing never shows two threads with one id", async () => {
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const answered = new Set<string>();
    for (const id of ["bob", " bob ", "bob\u0000", "bob\ud800", "bob\udc00", "zoe\u0308", "zoë", "bob\u0085", "😀", "\ud83d\ude00"]) {
      const res = await send(r.name, { external_user_id: id, text: "x" });
      if (res.status === 202) answered.add(res.body.data.thread_id);
      else expect(res.status).toBe(400);
    }
    // bob and " bob " are one thread; NFD and NFC spellings are distinct ids; refused ids made none.
    expect(answered.size).toBe(4);
    await listingCaughtUp(...answered);
    const listed = await call("GET", `/api/conversations/${r.name}/threads`, { key: await admin() });
    expect(listed.status).toBe(200);
    const ids = listed.body.data.items.map((t: { thread_id: string }) => t.thread_id) as string[];
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual([...answered].sort());
  });

  it("refuses control characters in thread_id query values, path ids, event ids, names and route fields", async () => {
    const key = await admin();
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    for (const path of [
      `/api/conversations/${r.name}/transcript?thread_id=${encodeURIComponent(`bridge:${r.name}:root/u\u0000`)}`,
      `/api/conversations/${r.name}/thread/mode?thread_id=${encodeURIComponent(`bridge:${r.name}:root/u\u0085`)}`,
    ]) {
      const res = await call("GET", path, { key });
      expect(res.status, path).toBe(400);
      expect(res.body.error).toContain("thread_id");
    }
    const forget = await call("DELETE", `/api/conversations/${r.name}/thread?thread_id=${encodeURIComponent(`bridge:${r.name}:root/\u0001`)}`, { key });
    expect(forget.status).toBe(400);
    const byId = await call("GET", `/api/conversations/${r.name}/messages/abc%00`, { key });
    expect(byId.status).toBe(400);
    expect(byId.body.error).toContain("message_id");

    const event = await call("POST", `/api/conversations/${r.name}/events`, {
      key,
      body: { address: "u", event: { event_id: "e\u0000", kind: "k", payload: {} } },
    });
    expect(event.status).toBe(400);
    expect(event.body.error).toContain("event.event_id");
    const mode = await call("PUT", `/api/conversations/${r.name}/thread/mode`, { key, body: { thread_id: `bridge:${r.name}:root/u\u0000`, mode: "manual" } });
    expect(mode.status).toBe(400);
    expect(mode.body.error).toContain("thread_id");

    const routeBody: Record<string, unknown> = { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id };
    for (const [field, extra] of [
      ["target_name", { target_name: "echo\u0000" }],
      ["our_identity", { door: "channel", channel: "twilio", our_identity: "+1555\u0000" }],
      ["channel", { door: "channel", channel: "twi\u009blio", our_identity: "+1555" }],
    ] as const) {
      const res = await call("POST", `/api/conversations/${uniq("bad-id").toLowerCase()}`, {
        key,
        body: { ...routeBody, ...extra },
      });
      expect(res.status, field).toBe(400);
      expect(res.body.error).toContain(field);
    }
    const key400 = await call("POST", "/api/auth/api-keys", { key, body: { user_id: "svc\u0000", scopes: [] } });
    expect(key400.status).toBe(400);
    expect(key400.body.error).toContain("user_id");
    const tool400 = await call("POST", "/api/tools-config/entries", { key, body: { title: "t\u0000", kind: "http", url: "https://tools.example/x" } });
    expect(tool400.status).toBe(400);
    expect(tool400.body.error).toContain("title");
  });

  it("refuses a lone surrogate anywhere in a JSON body, naming where; a proper pair round-trips", async () => {
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ external_user_id: "u", text: "hello \ud800 world" }, "invalid body: text: must not contain lone UTF-16 surrogates"],
      [{ external_user_id: "u", text: "x", form: { deep: [{ v: "\udc00" }] } }, "invalid body: form.deep.0.v: must not contain lone UTF-16 surrogates"],
      [{ external_user_id: "u", text: "x", form: { "\ud800": 1 } }, "invalid body: form (a key): must not contain lone UTF-16 surrogates"],
    ];
    for (const [body, error] of cases) {
      const res = await send(r.name, body);
      expect(res).toMatchObject({ status: 400, body: { error } });
    }
    // JSON.stringify writes the pair as raw UTF-8; the escaped spelling must round-trip too.
    const escaped = await postRaw(`/api/conversations/${r.name}/messages`, '{"external_user_id":"u","text":"hi \\ud83d\\ude00","wait_seconds":10}');
    expect(escaped.body.data).toMatchObject({ status: "answered", answer: "hi 😀" });
    // A literal backslash-u in the text is not an escape and is left alone.
    const literal = await send(r.name, { external_user_id: "u", text: "path C:\\ud800", wait_seconds: 10 });
    expect(literal.body.data).toMatchObject({ status: "answered", answer: "path C:\\ud800" });
  });
});

describe("strict bodies", () => {
  it("refuses unknown fields at key mint instead of dropping them (disabled:true is honoured)", async () => {
    const key = await admin();
    const unknown = await call("POST", "/api/auth/api-keys", { key, body: { user_id: uniq("strict"), scopes: ["tools:read"], colour: "red" } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain("colour");
    expect(unknown.body.error).not.toContain("red");

    const userId = uniq("disabled");
    const minted = await call("POST", "/api/auth/api-keys", {
      key,
      body: { user_id: userId, description: "born disabled", scopes: ["tools:read"], disabled: true },
    });
    expect(minted.status).toBe(200);
    const raw = minted.body.data.api_key as string;
    expect(await call("GET", "/api/auth/me", { key: raw })).toMatchObject({ status: 401, body: { error: "Unauthorized" } });
    const enabled = await call("PUT", `/api/auth/api-keys/${userId}`, { key, body: { disabled: false } });
    expect(enabled.body.data).toMatchObject({ user_id: userId, disabled: false, description: "born disabled" });
    expect((await call("GET", "/api/auth/me", { key: raw })).status).toBe(200);

    // The default stays an enabled key, and `disabled` must be a boolean.
    const plain = await mintKey({ scopes: ["tools:read"] });
    expect((await call("GET", "/api/auth/me", { key: plain.key })).status).toBe(200);
    const wrong = await call("POST", "/api/auth/api-keys", { key, body: { user_id: uniq("strict"), scopes: [], disabled: "yes" } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toContain("disabled");
  });

  it("refuses unknown fields at bootstrap and at the resource read door", async () => {
    await admin();
    const boot = await call("POST", "/api/keys/bootstrap", { body: { user_id: "root2", description: "", bootstrap_token: BOOTSTRAP_TOKEN, role: "admin" } });
    expect(boot.status).toBe(400);
    expect(boot.body.error).toContain("role");
    const read = await call("POST", "/api/resources/get", { key: await admin(), body: { id: "x", version: 2 } });
    expect(read.status).toBe(400);
    expect(read.body.error).toContain("version");
  });
});
