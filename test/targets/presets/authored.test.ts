/** Authored agents and spec-runnable agents (platform facts B2; docs/targets.md "Authored agents"). */
import { beforeEach, describe, expect, it } from "vitest";
import { answerOnly, fakeNetwork, json } from "../../helpers/network";
import { admin, call, mintKey, uniq } from "../../helpers/http";
import { callWith, parseSse } from "../helpers";

const AGENT_URL = "https://agent.example/run";

beforeEach(() => {
  fakeNetwork(answerOnly({}));
});

/** A declared http agent that answers `seen: <user_message>` and records what it was sent. */
async function httpAgent(): Promise<{ name: string; seen: any[] }> {
  const name = uniq("agent");
  const r = await call("POST", "/api/agents-config/entries", { key: await admin(), body: { title: name, kind: "http", config: { url: AGENT_URL } } });
  if (r.status !== 200) throw new Error(`agent failed ${r.status} ${JSON.stringify(r.body)}`);
  const seen: any[] = [];
  fakeNetwork(
    answerOnly({
      [`POST ${AGENT_URL}`]: (_req, body) => {
        const sent = JSON.parse(body);
        seen.push(sent);
        return json({ text: `seen: ${sent.input.user_message}` });
      },
    }),
  );
  return { name, seen };
}

async function authored(base: string, extra: Record<string, unknown> = {}) {
  const name = uniq("authored");
  const r = await call("POST", "/api/presets", { key: await admin(), body: { name, base_tool: base, description: "an authored agent", ...extra } });
  return { name, r };
}

const runAuthored = (name: string, body: unknown, key: string) => callWith({}, "POST", `/api/agents/authored/${name}/runs`, { key, body });
const frames = (text: string) => parseSse(text).map((f) => ("data" in f ? f.data : f));

describe("authoring: a preset over a declared agent", () => {
  it("bakes agent run fields only, and refuses the tool-only parts", async () => {
    const agent = await httpAgent();
    const ok = await authored(agent.name, { fixed_kwargs: { user_message: "daily summary" } });
    expect(ok.r.status).toBe(200);
    expect(ok.r.body.data).toMatchObject({ base_tool: agent.name, fixed_kwargs: { user_message: "daily summary" } });
    const validated = await call("POST", "/api/presets/validate", {
      key: await admin(),
      body: { name: uniq("v"), base_tool: agent.name, fixed_kwargs: { thread_id: "team-memory" } },
    });
    expect(validated.body.data.kind).toBe("authored_agent");

    const unknown = await authored(agent.name, { fixed_kwargs: { system_prompt: "SECRET-PROMPT" } });
    expect(unknown.r.status).toBe(400);
    expect(unknown.r.body.error).toContain("fixed_kwargs");
    expect(unknown.r.body.error).not.toContain("SECRET-PROMPT");
    expect((await authored(agent.name, { fixed_kwargs: { thread_id: "bridge:x" } })).r.status).toBe(400);
    expect((await authored(agent.name, { fixed_kwargs: { user_message: "" } })).r.status).toBe(400);
    for (const extra of [{ input_schema: { type: "object" } }, { output_schema: { type: "string" } }, { extensions: [["cache"]] }]) {
      const r = await authored(agent.name, extra);
      expect(r.r.status, JSON.stringify(extra)).toBe(400);
      expect(r.r.body.error).toContain("authored agent");
    }
    // A new version is checked the same way, also when base_tool is carried forward.
    const v = await call("POST", `/api/presets/${ok.name}/versions`, { key: await admin(), body: { fixed_kwargs: { nope: 1 } } });
    expect(v.status).toBe(400);
    expect((await call("POST", `/api/presets/${ok.name}/versions`, { key: await admin(), body: { fixed_kwargs: { thread_id: "t-1" } } })).status).toBe(200);
  });

  it("a preset may not take an agent's name (400); a tool of the agent's name wins as base (a tool preset)", async () => {
    const agent = await httpAgent();
    const clash = await call("POST", "/api/presets", { key: await admin(), body: { name: agent.name, base_tool: "echo" } });
    expect(clash.status).toBe(400);
    expect(clash.body.error).toContain("agent");
    const echoPreset = await authored("echo", { fixed_kwargs: { message: "hi" } });
    expect(echoPreset.r.status).toBe(200); // the echo tool, not the echo agent
  });
});

describe("GET /api/agents and /api/agents/spec-runnable", () => {
  it("mark declared agents spec-runnable with their run tool's name; echo and a tool-shadowed agent are not", async () => {
    const key = await admin();
    const agent = await httpAgent();
    const shadowed = uniq("shadow");
    await call("POST", "/api/agents-config/entries", { key, body: { title: shadowed, kind: "http", config: { url: AGENT_URL } } });
    await call("POST", "/api/tools-config/entries", { key, body: { title: shadowed, kind: "http", url: "https://tools.example/" } });
    const all = (await call("GET", "/api/agents", { key })).body.data.items;
    expect(all.find((a: any) => a.name === "echo")).toMatchObject({ kind: "builtin", tool_name: null, spec_runnable: false });
    expect(all.find((a: any) => a.name === agent.name)).toMatchObject({ kind: "http", tool_name: agent.name, spec_runnable: true });
    expect(all.find((a: any) => a.name === shadowed)).toMatchObject({ tool_name: null, spec_runnable: false });
    const runnable = (await call("GET", "/api/agents/spec-runnable", { key })).body.data;
    expect(runnable.items.every((a: any) => a.spec_runnable)).toBe(true);
    expect(runnable.items.map((a: any) => a.name)).toContain(agent.name);
    expect(runnable.items.map((a: any) => a.name)).not.toContain("echo");
    expect(runnable.items.map((a: any) => a.name)).not.toContain(shadowed);
    expect(runnable.total).toBe(runnable.items.length);
    expect((await call("GET", "/api/agents/spec-runnable", { key: (await mintKey({ scopes: ["tools"] })).key })).status).toBe(403);
  });
});

describe("POST /api/agents/authored/{name}/runs", () => {
  it("streams a run of the base agent with the baked fields and the request's", async () => {
    const agent = await httpAgent();
    const { name } = await authored(agent.name, { fixed_kwargs: { user_message: "daily summary" } });
    const r = await runAuthored(name, {}, await admin());
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(r.headers.get("x-authored-version")).toBe("1");
    expect(r.headers.get("x-thread-id")).toBeTruthy();
    expect(frames(r.text)).toEqual([
      { type: "message_delta", text: "seen: daily summary" },
      { type: "message_final", text: "seen: daily summary" },
      { type: "stream.end" },
    ]);
    expect(agent.seen[0]).toMatchObject({ input: { user_message: "daily summary" }, thread_id: r.headers.get("x-thread-id") });

    // A baked thread, the message from the request.
    const threaded = await authored(agent.name, { fixed_kwargs: { thread_id: "team-memory" } });
    const t = await runAuthored(threaded.name, { user_message: "hello" }, await admin());
    expect(t.headers.get("x-thread-id")).toBe("team-memory");
    expect(frames(t.text).at(-2)).toEqual({ type: "message_final", text: "seen: hello" });
  });

  it("refuses a baked field repeated, an unknown field, and a missing user_message (400)", async () => {
    const agent = await httpAgent();
    const { name } = await authored(agent.name, { fixed_kwargs: { user_message: "fixed" } });
    const key = await admin();
    const repeated = await runAuthored(name, { user_message: "OVERRIDE-ATTEMPT" }, key);
    expect(repeated.status).toBe(400);
    expect(repeated.body.error).toContain("user_message");
    expect(repeated.body.error).not.toContain("OVERRIDE-ATTEMPT");
    expect((await runAuthored(name, { surprise: 1 }, key)).status).toBe(400);
    expect((await runAuthored(name, { thread_id: "bridge:x" }, key)).status).toBe(400);
    const open = await authored(agent.name);
    const missing = await runAuthored(open.name, {}, key);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toContain("user_message");
    expect(agent.seen).toHaveLength(0);
  });

  it("unknown 404, a tool preset 400, a removed base agent 404", async () => {
    const key = await admin();
    expect((await runAuthored(uniq("ghost"), { user_message: "x" }, key)).status).toBe(404);
    const tool = await authored("echo", { fixed_kwargs: { message: "hi" } });
    const onTool = await runAuthored(tool.name, { user_message: "x" }, key);
    expect(onTool.status).toBe(400);
    expect(onTool.body.error).toContain("tool");
    const agent = await httpAgent();
    const { name } = await authored(agent.name);
    await call("DELETE", `/api/agents-config/entries/${agent.name}`, { key });
    expect((await runAuthored(name, { user_message: "x" }, key)).status).toBe(404);
  });

  it("needs a run grant for the authored name before any lookup, and the run authorizes the base agent live", async () => {
    const agent = await httpAgent();
    const { name } = await authored(agent.name, { fixed_kwargs: { user_message: "go" } });
    const none = await mintKey({ scopes: ["agents:read"] });
    expect((await runAuthored(name, {}, none.key)).status).toBe(403);
    expect((await runAuthored(uniq("ghost"), {}, none.key)).status).toBe(403); // same answer, exists or not
    const authoredOnly = await mintKey({ scopes: ["agents:read", `agent:${name}`] });
    const denied = await runAuthored(name, {}, authoredOnly.key);
    expect(denied.status).toBe(200);
    expect(frames(denied.text)).toEqual([{ type: "stream.error", message: "run denied: the key may not run this agent" }]);
    expect(agent.seen).toHaveLength(0);
    const both = await mintKey({ scopes: ["agents:read", `agent:${name}`, `agent:${agent.name}`] });
    expect(frames((await runAuthored(name, {}, both.key)).text).at(-1)).toEqual({ type: "stream.end" });
  });
});
