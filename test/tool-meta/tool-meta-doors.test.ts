/**
 * The tool metadata doors (docs/tool-metadata.md): folders (create, rename, move with
 * cycle refusal, delete only when empty), per-tool merge patches, `GET /api/tool-meta`,
 * `GET /api/tools/tags`, grants and 501 without a store.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";

const T = "/api/tool-meta";

async function folder(name: string, parent_id: string | null = null): Promise<string> {
  const r = await call("POST", `${T}/folders`, { key: await admin(), body: { name, parent_id } });
  if (r.status !== 200) throw new Error(`folder: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data.folder_id;
}

async function patch(tool: string, body: unknown, headers?: Record<string, string>) {
  return call("PATCH", `${T}/tools/${tool}`, { key: await admin(), body, headers });
}

describe("folders", () => {
  it("creates top-level and nested folders; sibling names are unique; unknown parent 404", async () => {
    const key = await admin();
    const name = uniq("Sales");
    const r = await call("POST", `${T}/folders`, { key, body: { name } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      folder_id: expect.stringMatching(/^fld-[0-9a-f]{32}$/),
      name,
      parent_id: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const child = await folder("CRM", r.body.data.folder_id);
    expect(child).toMatch(/^fld-/);
    expect((await call("POST", `${T}/folders`, { key, body: { name } })).status).toBe(409);
    // The same name under another parent is fine.
    expect((await call("POST", `${T}/folders`, { key, body: { name: "CRM" } })).status).toBe(200);
    expect((await call("POST", `${T}/folders`, { key, body: { name: "x", parent_id: `fld-${"0".repeat(32)}` } })).status).toBe(404);
    expect((await call("POST", `${T}/folders`, { key, body: { name: "  " } })).status).toBe(400);
    expect((await call("POST", `${T}/folders`, { key, body: { name: "x", parent_id: "not-an-id" } })).status).toBe(400);
  });

  it("renames (409 onto a sibling's name) and 404s an unknown folder", async () => {
    const key = await admin();
    const a = await folder(uniq("a"));
    const bName = uniq("b");
    await folder(bName);
    const r = await call("POST", `${T}/folders/${a}/rename`, { key, body: { name: "Renamed " + a.slice(-6) } });
    expect(r.status).toBe(200);
    expect(r.body.data.name).toBe("Renamed " + a.slice(-6));
    expect((await call("POST", `${T}/folders/${a}/rename`, { key, body: { name: bName } })).status).toBe(409);
    expect((await call("POST", `${T}/folders/fld-${"1".repeat(32)}/rename`, { key, body: { name: "x" } })).status).toBe(404);
  });

  it("moves under another folder or to the top; refuses a cycle with 409", async () => {
    const key = await admin();
    const a = await folder(uniq("a"));
    const b = await folder("b", a);
    const c = await folder("c", b);
    const d = await folder(uniq("d"));
    for (const [moving, into] of [
      [a, a],
      [a, c],
      [b, c],
    ]) {
      const r = await call("POST", `${T}/folders/${moving}/move`, { key, body: { parent_id: into } });
      expect(r.status).toBe(409);
      expect(r.body.error).toContain("itself or one of its descendants");
    }
    const moved = await call("POST", `${T}/folders/${c}/move`, { key, body: { parent_id: d } });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ folder_id: c, parent_id: d });
    const top = await call("POST", `${T}/folders/${b}/move`, { key, body: { parent_id: null } });
    expect(top.body.data.parent_id).toBeNull();
    expect((await call("POST", `${T}/folders/${b}/move`, { key, body: { parent_id: `fld-${"2".repeat(32)}` } })).status).toBe(404);
    expect((await call("POST", `${T}/folders/${b}/move`, { key, body: {} })).status).toBe(400);
    const rows = await env.DB.prepare("SELECT folder_id, parent_id FROM tool_meta_folders WHERE folder_id IN (?, ?, ?)").bind(a, b, c).all();
    expect(Object.fromEntries(rows.results.map((r: any) => [r.folder_id, r.parent_id]))).toEqual({ [a]: null, [b]: null, [c]: d });
  });

  it("the cycle guard holds inside the write too", async () => {
    const a = await folder(uniq("ga"));
    const b = await folder("gb", a);
    // A stale writer that skipped the checks: the statement itself refuses.
    const { moveFolder } = await import("../../src/tool-meta/store");
    await expect(moveFolder(env.DB, a, b, new Date().toISOString())).rejects.toMatchObject({ status: 409 });
    const res = await env.DB.prepare(
      `UPDATE tool_meta_folders SET parent_id = ?1 WHERE folder_id = ?2 AND NOT EXISTS (
         WITH RECURSIVE up(id) AS (SELECT ?1 UNION SELECT f.parent_id FROM tool_meta_folders f JOIN up ON f.folder_id = up.id WHERE f.parent_id IS NOT NULL)
         SELECT 1 FROM up WHERE id = ?2)`,
    )
      .bind(b, a)
      .run();
    expect(res.meta.changes).toBe(0);
  });

  it("deletes only an empty folder: 409 while it holds folders or tools", async () => {
    const key = await admin();
    const parent = await folder(uniq("p"));
    const child = await folder("child", parent);
    const r = await call("DELETE", `${T}/folders/${parent}`, { key });
    expect(r.status).toBe(409);
    expect(r.body.error).toContain("not empty");
    expect((await patch("echo", { folder_id: child })).status).toBe(200);
    expect((await call("DELETE", `${T}/folders/${child}`, { key })).status).toBe(409);
    expect((await patch("echo", { folder_id: null })).status).toBe(200);
    expect((await call("DELETE", `${T}/folders/${child}`, { key })).body.data).toEqual({ removed: true, folder_id: child });
    expect((await call("DELETE", `${T}/folders/${parent}`, { key })).status).toBe(200);
    expect((await call("DELETE", `${T}/folders/${parent}`, { key })).status).toBe(404);
  });
});

describe("tool rows (merge patch)", () => {
  it("sets, replaces and resets members; a row back at the defaults is deleted", async () => {
    const f = await folder(uniq("tools"));
    const first = await patch(
      "echo",
      { tags: ["demo", "text"], badges: ["built-in"], hidden: false, folder_id: f },
      { "content-type": "application/merge-patch+json" },
    );
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({
      name: "echo",
      tags: ["demo", "text"],
      badges: ["built-in"],
      hidden: false,
      folder_id: f,
      registered: true,
      updated_at: expect.any(String),
    });
    const second = await patch("echo", { tags: ["demo"], hidden: null });
    expect(second.body.data).toMatchObject({ tags: ["demo"], badges: ["built-in"], hidden: null, folder_id: f });
    const reset = await patch("echo", { tags: null, badges: null, folder_id: null });
    expect(reset.body.data).toMatchObject({ tags: [], badges: [], hidden: null, folder_id: null });
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_meta_tools WHERE tool_name = 'echo'").first("n")).toBe(0);
  });

  it("refuses bad members (400, value not echoed), unknown tools and folders (404)", async () => {
    for (const body of [
      { tags: ["a", "a"] },
      { tags: ["SECRETTAG\u0000"] },
      { hidden: "yes" },
      { colour: "red" },
      {
        tags: Array(33)
          .fill(0)
          .map((_, i) => `t${i}`),
      },
      { badges: ["x".repeat(33)] },
    ]) {
      const r = await patch("echo", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(r.body)).not.toContain("SECRETTAG");
    }
    expect((await patch("no-such-tool", { tags: ["x"] })).status).toBe(404);
    expect((await patch("echo", { folder_id: `fld-${"3".repeat(32)}` })).status).toBe(404);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_meta_tools WHERE tool_name = 'echo'").first("n")).toBe(0);
  });

  it("GET /api/tool-meta lists folders and rows, also a row whose tool is gone; DELETE removes a row", async () => {
    const key = await admin();
    const title = uniq("crm").replace(/[^A-Za-z0-9_-]/g, "");
    expect((await call("POST", "/api/tools-config/entries", { key, body: { title, kind: "http", url: "https://crm.example.com/run" } })).status).toBe(200);
    expect((await patch(title, { tags: ["crm"] })).status).toBe(200);
    expect((await call("DELETE", `/api/tools-config/entries/${title}`, { key })).status).toBe(200);
    const all = await call("GET", T, { key });
    expect(all.status).toBe(200);
    expect(all.body.data.tools.find((t: any) => t.name === title)).toMatchObject({ tags: ["crm"], registered: false });
    expect(Array.isArray(all.body.data.folders)).toBe(true);
    expect((await call("DELETE", `${T}/tools/${title}`, { key })).body.data).toEqual({ removed: true, name: title });
    expect((await call("DELETE", `${T}/tools/${title}`, { key })).status).toBe(404);
  });
});

describe("GET /api/tools/tags", () => {
  it("lists every registered tool with its labels, defaults for tools without a row", async () => {
    await patch("echo", { tags: ["demo"], badges: ["new"], hidden: true });
    const r = await call("GET", "/api/tools/tags", { key: await admin() });
    expect(r.status).toBe(200);
    const names = (await call("GET", "/api/tools", { key: await admin() })).body.data;
    expect(r.body.data.map((t: any) => t.name)).toEqual(names);
    expect(r.body.data.find((t: any) => t.name === "echo")).toEqual({ name: "echo", tags: ["demo"], hidden: true, badges: ["new"] });
    const other = r.body.data.find((t: any) => t.name !== "echo");
    expect(other).toEqual({ name: other.name, tags: [], hidden: null, badges: [] });
    // Without the overlay's store: the defaults, not a 501 (the tools registry still answers).
    const off = await fetchWithEnv({ ...env, TOOL_META_STORE_URL: "" }, new Request(`${BASE}/api/tools/tags`, { headers: { "x-api-key": await admin() } }));
    expect(off.status).toBe(200);
    expect(((await off.json()) as any).data.find((t: any) => t.name === "echo")).toEqual({ name: "echo", tags: [], hidden: null, badges: [] });
    await patch("echo", { tags: null, badges: null, hidden: null });
  });
});

describe("grants and configuration", () => {
  it("tools:read reads; tools:write writes", async () => {
    const reader = await mintKey({ scopes: ["tools:read"] });
    expect((await call("GET", T, { key: reader.key })).status).toBe(200);
    expect((await call("GET", "/api/tools/tags", { key: reader.key })).status).toBe(200);
    expect((await call("POST", `${T}/folders`, { key: reader.key, body: { name: "x" } })).status).toBe(403);
    expect((await call("PATCH", `${T}/tools/echo`, { key: reader.key, body: { tags: ["x"] } })).status).toBe(403);
    const writer = await mintKey({ scopes: ["tools"] });
    expect((await call("POST", `${T}/folders`, { key: writer.key, body: { name: uniq("w") } })).status).toBe(200);
  });

  it("every /api/tool-meta door answers 501 tool-meta-not-configured without TOOL_META_STORE_URL", async () => {
    const key = await admin();
    const id = `fld-${"4".repeat(32)}`;
    for (const [method, path, body] of [
      ["GET", T],
      ["POST", `${T}/folders`, { name: "x" }],
      ["POST", `${T}/folders/${id}/rename`, { name: "x" }],
      ["POST", `${T}/folders/${id}/move`, { parent_id: null }],
      ["DELETE", `${T}/folders/${id}`],
      ["PATCH", `${T}/tools/echo`, { tags: [] }],
      ["DELETE", `${T}/tools/echo`],
    ] as Array<[string, string, unknown?]>) {
      const res = await fetchWithEnv(
        { ...env, TOOL_META_STORE_URL: "" },
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(await res.json()).toMatchObject({ code: "tool-meta-not-configured" });
    }
  });
});
