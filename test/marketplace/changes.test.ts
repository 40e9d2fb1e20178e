/**
 * Install, update and uninstall against an https registry answered at the network edge: all or
 * nothing (one D1 batch; a bundle with one bad declaration installs nothing), collisions with what
 * the plugin does not own, update replacing and removing what the plugin owns, uninstall removing
 * only that, and what depends on a plugin's declarations.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { GuardTripped, applyPlan } from "../../src/marketplace/apply";
import { RegistryIndex } from "../../src/marketplace/index-format";
import { planChange } from "../../src/marketplace/plan";
import { settingsFor } from "../../src/platform/settings/settings";
import { admin, call } from "../helpers/http";
import { type Json, V2, agent, dn, indexOf, mcall, ns, pluginEntry, preset, serveIndex, tool, version } from "./registry-fixtures";
import { must } from "../../src/platform/must";

const M = "/api/marketplace";

async function exists(kind: "tool" | "agent" | "preset", name: string): Promise<boolean> {
  const [table, col] = kind === "tool" ? ["tool_declarations", "title"] : kind === "agent" ? ["agent_declarations", "title"] : ["presets", "name"];
  return (await env.DB.prepare(`SELECT 1 FROM ${table} WHERE ${col} = ?`).bind(name).first()) !== null;
}

describe("all or nothing", () => {
  it("a bundle with one declaration that breaks the contract installs nothing: 502 PLUGIN_BUNDLE_INVALID naming the version", async () => {
    const key = await admin();
    const n = ns();
    const [t1, t2, bad] = [dn("t"), dn("t"), dn("t")];
    serveIndex(() => indexOf(pluginEntry(n, "p", [version("1.0.0", { http_tools: [tool(t1), tool(t2), tool(bad, { url: "ftp://nope.example/x" })] })])));
    const r = await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/p` } });
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ code: "PLUGIN_BUNDLE_INVALID", ref: `${n}/p`, version: "1.0.0" });
    expect(r.body.problems).toEqual([expect.stringContaining("http_tools.2.url")]);
    expect(r.body.error).toContain(`${n}/p 1.0.0`);
    for (const t of [t1, t2, bad]) expect(await exists("tool", t)).toBe(false);
    expect((await call("GET", `${M}/installed`, { key })).body.data.items.map((p: any) => p.ref)).not.toContain(`${n}/p`);
    // The detail door marks that version invalid instead of failing.
    const detail = await mcall("GET", `${M}/plugins/${n}/p`, { key });
    expect(detail.body.data.versions[0]).toMatchObject({ version: "1.0.0", bundle: "invalid", declarations: null });
  });

  it("a declaration this deployment refuses installs nothing: 422 PLUGIN_DECLARATION_REFUSED listing every problem", async () => {
    const key = await admin();
    const n = ns();
    const [ok, priv, ref, a, p1, p2] = [dn("t"), dn("t"), dn("t"), dn("a"), dn("p"), dn("p")];
    serveIndex(() =>
      indexOf(
        pluginEntry(n, "p", [
          version("1.0.0", {
            http_tools: [tool(ok), tool(priv, { url: "https://10.1.2.3/run" }), tool(ref, { headers: { authorization: { env: "CONVERSATIONS_STORE_URL" } } })],
            agents: [agent(a, { config: { url: "https://127.0.0.1/agent" } })],
            presets: [preset(p1, "no-such-tool-anywhere"), preset(p2, ok)],
          }),
        ]),
      ),
    );
    const r = await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/p` } });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ code: "PLUGIN_DECLARATION_REFUSED", ref: `${n}/p`, version: "1.0.0" });
    expect(r.body.problems).toEqual([
      expect.stringMatching(new RegExp(`^http_tools\\[1\\] \\(${priv}\\): url: .*private`)),
      expect.stringMatching(new RegExp(`^http_tools\\[2\\] \\(${ref}\\): headers.authorization: references an env var outside the secret-reference scope`)),
      expect.stringMatching(new RegExp(`^agents\\[0\\] \\(${a}\\): config.url: .*loopback`)),
      `presets[0] (${p1}): base_tool names no built-in or declared HTTP tool`,
    ]);
    // Never the URL or the variable.
    expect(JSON.stringify(r.body)).not.toContain("10.1.2.3");
    expect(JSON.stringify(r.body)).not.toContain("CONVERSATIONS_STORE_URL");
    for (const t of [ok, priv, ref]) expect(await exists("tool", t)).toBe(false);
    expect(await exists("preset", p2)).toBe(false);
    // The same preview refuses alike and still writes nothing.
    expect((await mcall("POST", `${M}/install/preview`, { key, body: { ref: `${n}/p` } })).body.code).toBe("PLUGIN_DECLARATION_REFUSED");
  });

  it("a plugin may not carry a connector connection reference", async () => {
    const key = await admin();
    const n = ns();
    const t = dn("t");
    serveIndex(() =>
      indexOf(
        pluginEntry(n, "p", [
          version("1.0.0", { http_tools: [tool(t, { headers: { authorization: { connection: "0b7e4c1a-2f3d-4a5b-8c9d-0e1f2a3b4c5d" } } })] }),
        ]),
      ),
    );
    const r = await mcall("POST", `${M}/install/preview`, { key, body: { ref: `${n}/p` } });
    expect(r.status).toBe(422);
    expect(r.body.problems).toEqual([
      `http_tools[0] (${t}): headers.authorization: a plugin may not reference a connector connection (connections belong to this deployment)`,
    ]);
    expect(await exists("tool", t)).toBe(false);
  });

  it("the batch re-checks collisions: a name declared by hand after planning stops the whole batch", async () => {
    const key = await admin();
    const n = ns();
    const [t1, t2, p1] = [dn("t"), dn("t"), dn("p")];
    const index = RegistryIndex.parse(indexOf(pluginEntry(n, "p", [version("1.0.0", { http_tools: [tool(t1), tool(t2)], presets: [preset(p1, t1)] })])));
    const settings = settingsFor(env);
    if (!settings.ok) throw new Error("settings");
    const plan = await planChange({ db: env.DB, settings: settings.settings, env }, index.plugins[0], index.plugins[0].versions[0], null, false);
    expect(plan.add.map((d) => d.name)).toEqual([t1, t2, p1]);
    // Someone declares t2 by hand between the plan and the batch.
    expect((await call("POST", "/api/tools-config/entries", { key, body: { title: t2, kind: "http", url: "https://example.com/mine" } })).status).toBe(200);
    await expect(applyPlan(env.DB, plan, new Date().toISOString())).rejects.toBeInstanceOf(GuardTripped);
    expect(await exists("tool", t1)).toBe(false);
    expect(await exists("preset", p1)).toBe(false);
    expect(must(await env.DB.prepare("SELECT COUNT(*) AS n FROM marketplace_installs WHERE ref = ?").bind(`${n}/p`).first<{ n: number }>(), "the row").n).toBe(
      0,
    );
    expect(must(await env.DB.prepare("SELECT COUNT(*) AS n FROM marketplace_guard").first<{ n: number }>(), "the row").n).toBe(0);
    // The door plans again and refuses with the name.
    serveIndex(() => indexOf(pluginEntry(n, "p", [version("1.0.0", { http_tools: [tool(t1), tool(t2)], presets: [preset(p1, t1)] })])));
    const r = await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/p` } });
    expect(r.status).toBe(409);
    expect(r.body.collisions).toEqual([{ kind: "http_tool", name: t2, owner: "operator" }]);
  });
});

describe("collisions", () => {
  it("with another plugin's declaration (named by its ref), a built-in, and across tools and presets", async () => {
    const key = await admin();
    const [a, b] = [ns(), ns()];
    const [shared, presetName, agentName] = [dn("t"), dn("p"), dn("a")];
    let index: Json = indexOf(
      pluginEntry(a, "first", [version("1.0.0", { http_tools: [tool(shared)], presets: [preset(presetName, shared)], agents: [agent(agentName)] })]),
    );
    serveIndex(() => index);
    expect((await mcall("POST", `${M}/install`, { key, body: { ref: `${a}/first` } })).status).toBe(200);
    index = indexOf(
      pluginEntry(b, "second", [
        version("1.0.0", {
          // A preset under the first plugin's tool name, a tool under its preset name, its agent, and the built-ins.
          presets: [preset(shared, presetName), preset("echo", presetName)],
          http_tools: [tool(presetName)],
          agents: [agent(agentName), agent("echo")],
        }),
      ]),
    );
    const r = await mcall("POST", `${M}/install`, { key, body: { ref: `${b}/second` } });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("DECLARATION_COLLISION");
    expect(r.body.collisions).toEqual([
      { kind: "preset", name: presetName, owner: `${a}/first` },
      { kind: "agent", name: agentName, owner: `${a}/first` },
      { kind: "agent", name: "echo", owner: "builtin" },
      { kind: "http_tool", name: shared, owner: `${a}/first` },
      { kind: "preset", name: "echo", owner: "builtin" },
    ]);
  });
});

describe("update", () => {
  it("replaces what the plugin owns, adds and removes by the new version, leaves the rest alone; re-applies; moves down on request", async () => {
    const key = await admin();
    const n = ns();
    const [t1, t2, p1, a1, mine] = [dn("t"), dn("t"), dn("p"), dn("a"), dn("mine")];
    const v1 = version("1.0.0", { http_tools: [tool(t1), tool(t2)], presets: [preset(p1, t1, { fixed_kwargs: { city: "Oslo" } })] });
    const v2 = version("1.1.0", {
      http_tools: [tool(t1, { url: "https://tools.example/v2" })],
      presets: [preset(p1, t1, { fixed_kwargs: { city: "Rome" } })],
      agents: [agent(a1)],
    });
    let versions = [v1];
    serveIndex(() => indexOf(pluginEntry(n, "p", versions)));
    expect((await call("POST", "/api/tools-config/entries", { key, body: { title: mine, kind: "http", url: "https://example.com/mine" } })).status).toBe(200);
    expect((await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/p` } })).status).toBe(200);

    // Nothing newer yet: update re-applies 1.0.0 (a preset whose body is unchanged gets no new version).
    const same = await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p` } });
    expect(same.body.data).toMatchObject({ operation: "update", version: "1.0.0", previous_version: "1.0.0" });
    expect((await call("GET", `/api/presets/${p1}`, { key })).body.data.latest_version).toBe(1);

    versions = [v1, v2];
    const preview = await mcall("POST", `${M}/install/preview`, { key, body: { ref: `${n}/p` } });
    expect(preview.body.data).toMatchObject({ operation: "update", version: "1.1.0", previous_version: "1.0.0" });
    expect(preview.body.data.changes.add.map((c: any) => [c.kind, c.name])).toEqual([["agent", a1]]);
    expect(preview.body.data.changes.replace.map((c: any) => [c.kind, c.name])).toEqual([
      ["http_tool", t1],
      ["preset", p1],
    ]);
    expect(preview.body.data.changes.remove).toEqual([{ kind: "http_tool", name: t2 }]);
    expect(await exists("tool", t2)).toBe(true); // the preview wrote nothing

    const r = await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p` } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.installed).toMatchObject({ version: "1.1.0", declarations: { http_tools: [t1], agents: [a1], presets: [p1] } });
    expect(await exists("tool", t2)).toBe(false);
    expect(await exists("agent", a1)).toBe(true);
    const tools = await call("GET", "/api/tools-schema", { key });
    expect(Object.keys(tools.body.data)).toContain(mine);
    const stored = await env.DB.prepare("SELECT spec FROM tool_declarations WHERE title = ?").bind(t1).first<{ spec: string }>();
    expect(JSON.parse(must(stored, "stored").spec).url).toBe("https://tools.example/v2");
    const p = await call("GET", `/api/presets/${p1}`, { key });
    expect(p.body.data).toMatchObject({ current_version: 2, latest_version: 2, fixed_kwargs: { city: "Rome" } });

    // Down again on request: the agent goes, t2 comes back, the preset gets a third version.
    const down = await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p`, version: "1.0.0" } });
    expect(down.body.data).toMatchObject({ version: "1.0.0", previous_version: "1.1.0" });
    expect(await exists("agent", a1)).toBe(false);
    expect(await exists("tool", t2)).toBe(true);
    expect((await call("GET", `/api/presets/${p1}`, { key })).body.data).toMatchObject({ current_version: 3, fixed_kwargs: { city: "Oslo" } });
    expect(await exists("tool", mine)).toBe(true);
    // An explicit version for another contract is refused; a missing one is 404.
    versions = [v1, v2, version("2.0.0", {}, V2)];
    expect((await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p`, version: "2.0.0" } })).body.code).toBe("VERSION_INCOMPATIBLE");
    expect((await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p`, version: "3.0.0" } })).status).toBe(404);
  });

  it("a declaration the plugin owns that was deleted by hand comes back with the next update", async () => {
    const key = await admin();
    const n = ns();
    const t = dn("t");
    serveIndex(() => indexOf(pluginEntry(n, "p", [version("1.0.0", { http_tools: [tool(t)] })])));
    await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/p` } });
    await call("DELETE", `/api/tools-config/entries/${t}`, { key });
    const r = await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p` } });
    expect(r.body.data.changes.add.map((c: any) => c.name)).toEqual([t]);
    expect(await exists("tool", t)).toBe(true);
  });
});

describe("uninstall and dependents", () => {
  it("removes only what the plugin owns; refuses while a route, a preset or an agent stands on it, unless forced", async () => {
    const key = await admin();
    const n = ns();
    const [t, p, a, route, hisPreset, hisAgent, mine] = [dn("t"), dn("p"), dn("a"), dn("r").toLowerCase(), dn("hp"), dn("ha"), dn("mine")];
    serveIndex(() => indexOf(pluginEntry(n, "p", [version("1.0.0", { http_tools: [tool(t)], presets: [preset(p, t)], agents: [agent(a)] })])));
    expect((await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/p` } })).status).toBe(200);
    expect((await call("POST", "/api/tools-config/entries", { key, body: { title: mine, kind: "http", url: "https://example.com/mine" } })).status).toBe(200);

    // A route to the plugin's agent: the uninstall is refused, naming it.
    expect(
      (await call("POST", `/api/conversations/${route}`, { key, body: { door: "api", target_kind: "agent", target_name: a, execution_key: "root" } })).status,
    ).toBe(200);
    const refused = await mcall("POST", `${M}/uninstall`, { key, body: { ref: `${n}/p` } });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: "PLUGIN_IN_USE", dependents: [{ kind: "route", name: route, depends_on: { kind: "agent", name: a } }] });
    expect(await exists("tool", t)).toBe(true);
    await call("DELETE", `/api/conversations/${route}`, { key });

    // An operator's preset on the plugin's tool, and an llm agent listing its preset as a tool.
    expect((await call("POST", "/api/presets", { key, body: { name: hisPreset, base_tool: t } })).status).toBe(200);
    const llm = { title: hisAgent, kind: "llm", config: { base_url: "https://llm.example/v1", model: "m", tool_names: [p] } };
    expect((await call("POST", "/api/agents-config/entries", { key, body: llm })).status).toBe(200);
    const again = await mcall("POST", `${M}/uninstall`, { key, body: { ref: `${n}/p` } });
    expect(again.body.dependents).toEqual([
      { kind: "preset", name: hisPreset, depends_on: { kind: "http_tool", name: t } },
      { kind: "agent", name: hisAgent, depends_on: { kind: "preset", name: p } },
    ]);

    const forced = await mcall("POST", `${M}/uninstall`, { key, body: { ref: `${n}/p`, force: true } });
    expect(forced.status).toBe(200);
    expect(forced.body.data).toEqual({
      ref: `${n}/p`,
      version: "1.0.0",
      removed: [
        { kind: "http_tool", name: t },
        { kind: "agent", name: a },
        { kind: "preset", name: p },
      ],
    });
    for (const [kind, name] of [
      ["tool", t],
      ["agent", a],
      ["preset", p],
    ] as const)
      expect(await exists(kind, name)).toBe(false);
    // What the operator declared stays.
    expect(await exists("preset", hisPreset)).toBe(true);
    expect(await exists("agent", hisAgent)).toBe(true);
    expect(await exists("tool", mine)).toBe(true);
    expect(must(await env.DB.prepare("SELECT COUNT(*) AS n FROM marketplace_owned WHERE ref = ?").bind(`${n}/p`).first<{ n: number }>(), "the row").n).toBe(0);
  });

  it("an update that would remove a declaration in use is refused unless forced; one the new version keeps under another kind still serves routes", async () => {
    const key = await admin();
    const n = ns();
    const [t, gone, route1, route2] = [dn("t"), dn("g"), dn("r").toLowerCase(), dn("r").toLowerCase()];
    let versions = [version("1.0.0", { http_tools: [tool(t), tool(gone)] })];
    serveIndex(() => indexOf(pluginEntry(n, "p", versions)));
    await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/p` } });
    for (const [route, target] of [
      [route1, t],
      [route2, gone],
    ]) {
      expect(
        (await call("POST", `/api/conversations/${route}`, { key, body: { door: "api", target_kind: "tool", target_name: target, execution_key: "root" } }))
          .status,
      ).toBe(200);
    }
    // 1.1.0 turns `t` into a preset (still a tool name) and drops `gone`.
    versions = [...versions, version("1.1.0", { presets: [preset(t, "echo")] })];
    const r = await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p` } });
    expect(r.status).toBe(409);
    expect(r.body.dependents).toEqual([{ kind: "route", name: route2, depends_on: { kind: "http_tool", name: gone } }]);
    const forced = await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p`, force: true } });
    expect(forced.status, JSON.stringify(forced.body)).toBe(200);
    expect(await exists("preset", t)).toBe(true);
    expect(await exists("tool", t)).toBe(false);
    expect(await exists("tool", gone)).toBe(false);
  });
});
