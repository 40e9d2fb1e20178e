/** Target conversation configs (spec §2.5, §4.8; decisions §12), through the Worker. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call, expectNotConfigured, mintKey, uniq } from "../helpers/http";

const path = (kind: string, name: string) => `/api/conversation-configs/${kind}/${encodeURIComponent(name)}`;

/** A declared HTTP tool (configs need an existing target). */
async function declaredTool(): Promise<string> {
  const title = uniq("cfgtool").replace(/[^A-Za-z0-9_-]/g, "_");
  const r = await call("POST", "/api/tools-config/entries", {
    key: await admin(),
    body: { title, kind: "http", description: "config test tool", url: "https://tools.example.com/run" },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return title;
}

const binding = { states: [{ state: "profile", subject_expr: { content: ".user" } }] };

describe("target conversation configs", () => {
  it("PUT creates, then replaces; GET reads; the list has it; DELETE removes it", async () => {
    const key = await admin();
    const name = await declaredTool();
    const body = { target_kind: "tool", target_name: name, multichannel: true, greeting_template: "Hi! Your code: {pairing_code}" };
    const created = await call("PUT", path("tool", name), { key, body });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const config = { ...body, state_binding: null };
    expect(created.body.data).toEqual({ created: true, target_kind: "tool", target_name: name, config });
    expect((await call("GET", path("tool", name), { key })).body).toEqual({ data: config });

    // A binding names a declared state (checked when it is saved).
    expect(
      (
        await call("PUT", "/api/states/profile", {
          key,
          body: { schema: { type: "object", properties: { n: { type: "integer" } } }, subject_kinds: ["thread"] },
        })
      ).status,
    ).toBe(200);
    const replaced = await call("PUT", path("tool", name), { key, body: { target_kind: "tool", target_name: name, state_binding: binding } });
    expect(replaced.body.data.created).toBe(false);
    const stored = (await call("GET", path("tool", name), { key })).body.data;
    expect(stored).toMatchObject({
      multichannel: false,
      greeting_template: null,
      state_binding: { states: [{ state: "profile", templates: [], scope_expr: null, input_injections: [], updates: [] }] },
    });

    const list = await call("GET", "/api/conversation-configs", { key });
    expect(list.status).toBe(200);
    expect(list.body.data.total).toBe(list.body.data.items.length);
    expect(list.body.data.items.filter((c: any) => c.target_name === name)).toHaveLength(1);

    expect((await call("DELETE", path("tool", name), { key })).body).toEqual({ data: { removed: true, target_kind: "tool", target_name: name } });
    expect((await call("GET", path("tool", name), { key })).status).toBe(404);
    expect((await call("DELETE", path("tool", name), { key })).status).toBe(404);
  });

  it("agent targets: the built-in echo agent takes a config, but no state binding", async () => {
    const key = await admin();
    const ok = await call("PUT", path("agent", "echo"), { key, body: { target_kind: "agent", target_name: "echo", multichannel: true } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const bound = await call("PUT", path("agent", "echo"), { key, body: { target_kind: "agent", target_name: "echo", state_binding: binding } });
    expect(bound.status).toBe(400);
    expect(bound.body.error).toContain("state_binding");
    expect((await call("GET", path("agent", "echo"), { key })).body.data.state_binding).toBeNull();
    await call("DELETE", path("agent", "echo"), { key });
  });

  it("refuses, storing nothing: path and body disagreeing, unknown targets, bad kinds and names, extra fields, bad templates and bindings", async () => {
    const key = await admin();
    const name = await declaredTool();
    const put = (body: unknown, p = path("tool", name)) => call("PUT", p, { key, body });
    const base = { target_kind: "tool", target_name: name };
    const cases: Array<[unknown, number, string, string?]> = [
      [{ ...base, target_name: `${name}-other` }, 400, "target_name"],
      [{ ...base, target_kind: "agent" }, 400, "target_kind"],
      [{ ...base, extra: 1 }, 400, "extra"],
      [{ ...base, greeting_template: "Hello {name}" }, 400, "greeting_template"],
      [{ ...base, greeting_template: "Hello {}" }, 400, "greeting_template"],
      [{ ...base, greeting_template: "Hello {pairing_code" }, 400, "greeting_template"],
      [{ ...base, greeting_template: "  " }, 400, "greeting_template"],
      [{ ...base, greeting_template: "x".repeat(4001) }, 400, "greeting_template"],
      [{ ...base, multichannel: "yes" }, 400, "multichannel"],
      [{ ...base, state_binding: { states: [] } }, 400, "state_binding"],
      [{ ...base, state_binding: { states: [{ state: "s" }] } }, 400, "subject_expr"],
      [
        {
          ...base,
          state_binding: {
            states: [{ state: "s", subject_expr: { content: "." }, input_injections: [{ into: "x", template_jq: "a", jq: { content: "." } }] }],
          },
        },
        400,
        "exactly one of template_jq or jq",
      ],
      [
        {
          ...base,
          state_binding: { states: [{ state: "s", subject_expr: { content: "." }, updates: [{ jq: { content: "[]" }, adapter: { content: "." } }] }] },
        },
        400,
        "no adapter",
      ],
      [{ ...base, state_binding: { states: [{ state: "s", subject_expr: { content: "." }, bogus: true }] } }, 400, "bogus"],
      [{ target_kind: "tool", target_name: "no_such_tool_xyz" }, 404, "tool not found", path("tool", "no_such_tool_xyz")],
      [{ target_kind: "agent", target_name: "no_such_agent_xyz" }, 404, "agent not found", path("agent", "no_such_agent_xyz")],
      [{ ...base, target_kind: "robot" }, 400, "target_kind", path("robot", name)],
    ];
    for (const [body, status, says, p] of cases) {
      const r = await put(body, p);
      expect(r.status, `${JSON.stringify(body).slice(0, 120)} → ${JSON.stringify(r.body)}`).toBe(status);
      expect(r.body.error).toContain(says);
    }
    expect((await call("GET", path("tool", name), { key })).status).toBe(404);
    expect((await call("GET", path("robot", name), { key })).status).toBe(400);
    expect((await call("GET", "/api/conversation-configs/tool/%20", { key })).status).toBe(400);
    expect((await call("DELETE", "/api/conversation-configs/tool/%20", { key })).status).toBe(400);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM conversation_configs WHERE target_name = ?").bind(name).first("n")).toBe(0);
  });

  it("reads need the conversations read grant, writes the write grant", async () => {
    const name = await declaredTool();
    const body = { target_kind: "tool", target_name: name };
    const reader = await mintKey({ scopes: ["conversations:read"] });
    const writer = await mintKey({ scopes: ["conversations"] });
    const outsider = await mintKey({ scopes: ["tools:read"] });
    expect((await call("PUT", path("tool", name), { key: reader.key, body })).status).toBe(403);
    expect((await call("PUT", path("tool", name), { key: writer.key, body })).status).toBe(200);
    expect((await call("GET", path("tool", name), { key: reader.key })).status).toBe(200);
    expect((await call("GET", "/api/conversation-configs", { key: reader.key })).status).toBe(200);
    expect((await call("GET", path("tool", name), { key: outsider.key })).status).toBe(403);
    expect((await call("DELETE", path("tool", name), { key: reader.key })).status).toBe(403);
    expect((await call("GET", path("tool", name))).status).toBe(401);
    expect((await call("DELETE", path("tool", name), { key: writer.key })).status).toBe(200);
  });

  it("every config door answers 501 conversations-not-configured without a store", async () => {
    await expectNotConfigured(
      [
        ["GET", "/api/conversation-configs"],
        ["GET", "/api/conversation-configs/tool/echo"],
        ["PUT", "/api/conversation-configs/tool/echo", { target_kind: "tool", target_name: "echo" }],
        ["DELETE", "/api/conversation-configs/tool/echo"],
      ],
      await admin(),
      expect,
    );
  });
});
