/**
 * upgrade-all (spec §4.10, §2.13; platform-facts A6) against an https registry at the network
 * edge: one result per installed ref, by ref, with every outcome of the closed vocabulary and its
 * detail pattern; a ref's failure is its entry and the refs after it still move.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isolateSettings } from "../../src/config/isolate-settings";
import { fakeNetwork } from "../helpers/network";
import { admin, call } from "../helpers/http";
import { type Json, V2, dn, indexOf, mcall, ns, pluginEntry, serveIndex, tool, version } from "./registry-fixtures";
import { must } from "../../src/platform/must";

const M = "/api/marketplace";

describe("upgrade-all", () => {
  it("with nothing installed answers no results; takes no body or an empty object", async () => {
    const key = await admin();
    serveIndex(() => indexOf());
    const none = await mcall("POST", `${M}/upgrade-all`, { key });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ data: { results: [] } });
    expect((await mcall("POST", `${M}/upgrade-all`, { key, body: {} })).body).toEqual({ data: { results: [] } });
  });

  it("answers 503 {error, reloading: true} while the stored settings generation is ahead of this isolate's, and starts the reload", async () => {
    const key = await admin();
    serveIndex(() => indexOf());
    // A long refresh interval, so no background check installs the new generation before the door looks.
    const vars = { SETTINGS_REFRESH_SECONDS: "60" };
    await isolateSettings.reload(env);
    const before = isolateSettings.generation();
    // Another isolate's reload: the stored generation moves, this isolate has not installed it.
    await env.DB.prepare("UPDATE settings_generation SET generation = generation + 1 WHERE id = 1").run();
    const refused = await mcall("POST", `${M}/upgrade-all`, { key, vars });
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: "a settings reload is in progress; retry shortly", reloading: true, code: "settings_reloading" });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // The refusal started the reload; once it lands, the retry runs.
    for (let i = 0; i < 50 && isolateSettings.generation() === before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(isolateSettings.generation()).toBe(must(before, "before") + 1);
    expect((await mcall("POST", `${M}/upgrade-all`, { key, vars })).status).toBe(200);
  });

  it("answers every outcome, one entry per ref, and a failure never aborts the batch", async () => {
    const key = await admin();
    const n = ns();
    const t = (plugin: string, v = "1") => `${plugin}-t${v}`;
    const first = (plugin: string) => version("1.0.0", { http_tools: [tool(`${n}-${t(plugin)}`)] });
    const names = ["a-clash", "b-up", "c-same", "d-newer", "e-nocompat-suffix", "f-nocompat", "g-badbundle", "h-vanished", "i-inuse"];
    let index: Json = indexOf(...names.map((p) => pluginEntry(n, p, [first(p)])));
    serveIndex(() => index);
    for (const p of names) expect((await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/${p}` } })).status, p).toBe(200);
    // What makes a-clash and i-inuse fail: a tool declared by hand, a route on i-inuse's tool.
    const mine = `${n}-a-clash-t2`;
    expect((await call("POST", "/api/tools-config/entries", { key, body: { title: mine, kind: "http", url: "https://example.com/mine" } })).status).toBe(200);
    const route = dn("r").toLowerCase();
    expect(
      (
        await call("POST", `/api/conversations/${route}`, {
          key,
          body: { door: "api", target_kind: "tool", target_name: `${n}-i-inuse-t1`, execution_key: "root" },
        })
      ).status,
    ).toBe(200);

    const entries: Record<string, Json[]> = {
      "a-clash": [first("a-clash"), version("1.1.0", { http_tools: [tool(`${n}-a-clash-t1`), tool(mine)] })],
      "b-up": [first("b-up"), version("1.1.0", { http_tools: [tool(`${n}-b-up-t1`, { description: "new" }), tool(`${n}-b-up-t2`)] })],
      "c-same": [first("c-same")],
      "d-newer": [first("d-newer"), version("2.0.0", { state_templates: [{}] }, V2), version("3.0.0-beta.1", {}, V2)],
      "e-nocompat-suffix": [version("1.0.0", {}, V2), version("2.0.0", {}, V2)],
      "f-nocompat": [version("1.0.0", {}, V2)],
      "g-badbundle": [first("g-badbundle"), version("1.1.0", { http_tools: [{ title: "x" }] })],
      "i-inuse": [first("i-inuse"), version("1.1.0", { http_tools: [tool(`${n}-i-inuse-t2`)] })],
    };
    index = indexOf(...Object.entries(entries).map(([p, versions]) => pluginEntry(n, p, versions)));

    const r = await mcall("POST", `${M}/upgrade-all`, { key });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const mineOnly = r.body.data.results.filter((e: any) => e.ref.startsWith(`${n}/`));
    expect(mineOnly.map((e: any) => [e.ref.slice(n.length + 1), e.outcome])).toEqual([
      ["a-clash", "failed"],
      ["b-up", "upgraded"],
      ["c-same", "up-to-date"],
      ["d-newer", "up-to-date"],
      ["e-nocompat-suffix", "no-compatible-version"],
      ["f-nocompat", "no-compatible-version"],
      ["g-badbundle", "failed"],
      ["h-vanished", "failed"],
      ["i-inuse", "failed"],
    ]);
    const detail = (p: string) => mineOnly.find((e: any) => e.ref === `${n}/${p}`).detail as string;
    expect(detail("b-up")).toBe("1.0.0 -> 1.1.0");
    expect(detail("c-same")).toBe("1.0.0 is the latest compatible version");
    expect(detail("d-newer")).toBe("1.0.0 is the latest compatible version (2.0.0 exists but does not support bridge-declarations 1)");
    expect(detail("e-nocompat-suffix")).toBe("no published version supports bridge-declarations 1 (2.0.0 exists but does not support bridge-declarations 1)");
    expect(detail("f-nocompat")).toBe("no published version supports bridge-declarations 1");
    expect(detail("a-clash")).toContain(`would replace declarations it does not own: http_tool ${mine} (operator)`);
    expect(detail("g-badbundle")).toContain("1.1.0 has an invalid declarations bundle");
    expect(detail("h-vanished")).toBe("the plugin is no longer published in the registry");
    expect(detail("i-inuse")).toContain(`route ${route} uses http_tool ${n}-i-inuse-t1`);
    for (const e of r.body.data.results) expect(Object.keys(e).sort()).toEqual(["detail", "outcome", "ref"]);

    // b-up moved through the ordinary update flow; the failed ones stayed as they were.
    const installed = (await call("GET", `${M}/installed`, { key })).body.data.items as any[];
    const at = (p: string) => installed.find((i) => i.ref === `${n}/${p}`);
    expect(at("b-up")).toMatchObject({ version: "1.1.0", declarations: { http_tools: [`${n}-b-up-t1`, `${n}-b-up-t2`] } });
    expect(at("a-clash")).toMatchObject({ version: "1.0.0", declarations: { http_tools: [`${n}-a-clash-t1`] } });
    expect(at("i-inuse").version).toBe("1.0.0");
    expect(await env.DB.prepare("SELECT 1 FROM tool_declarations WHERE title = ?").bind(`${n}-i-inuse-t1`).first()).not.toBeNull();
    const stored = await env.DB.prepare("SELECT spec FROM tool_declarations WHERE title = ?").bind(mine).first<{ spec: string }>();
    expect(JSON.parse(must(stored, "stored").spec).url).toBe("https://example.com/mine");

    // Run again: b-up is now up to date.
    const again = await mcall("POST", `${M}/upgrade-all`, { key });
    expect(again.body.data.results.find((e: any) => e.ref === `${n}/b-up`)).toEqual({
      ref: `${n}/b-up`,
      outcome: "up-to-date",
      detail: "1.1.0 is the latest compatible version",
    });
  });

  it("a registry that cannot be read fails every ref, still answering 200 with one entry each", async () => {
    const key = await admin();
    fakeNetwork(() => {
      throw new Error("connection refused");
    });
    const r = await mcall("POST", `${M}/upgrade-all`, { key });
    expect(r.status).toBe(200);
    expect(r.body.data.results.length).toBeGreaterThan(0);
    for (const e of r.body.data.results)
      expect(e).toEqual({ ref: e.ref, outcome: "failed", detail: "marketplace registry unavailable: it could not be reached" });
  });
});
