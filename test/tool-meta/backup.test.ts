/**
 * The backup's `tool-meta` section (docs/backup.md): export, the checks an import makes
 * before writing (ids, parents, sibling names, cycles across the document and the deployment),
 * and 501 without the store.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, uniq } from "../helpers/http";

const NOW = "2026-01-01T00:00:00.000Z";
const fid = (c: string) => `fld-${c.repeat(32)}`;
const folderRow = (folder_id: string, name: string, parent_id: string | null = null) => ({
  kind: "folder",
  folder_id,
  name,
  parent_id,
  created_at: NOW,
  updated_at: NOW,
});
const toolRow = (name: string, extra: Record<string, unknown> = {}) => ({
  kind: "tool",
  name,
  tags: [],
  badges: [],
  hidden: null,
  folder_id: null,
  updated_at: NOW,
  ...extra,
});

async function importRows(rows: unknown[]) {
  return call("POST", "/api/backup/import", { key: await admin(), body: { document: { version: 1, exported_at: NOW, sections: { "tool-meta": rows } } } });
}

const count = async (sql: string, ...b: unknown[]) =>
  Number(
    await env.DB.prepare(sql)
      .bind(...b)
      .first("n"),
  );

describe("the tool-meta section", () => {
  it("imports folders and rows (also for a tool that is not registered), upserting by id and name", async () => {
    const r = await importRows([
      folderRow(fid("a"), "Top"),
      folderRow(fid("b"), "Inner", fid("a")),
      toolRow("echo", { tags: ["x"], folder_id: fid("b") }),
      toolRow("gone-tool", { hidden: true }),
    ]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.sections).toEqual([{ name: "tool-meta", applied: 4 }]);
    const meta = await call("GET", "/api/tool-meta", { key: await admin() });
    expect(meta.body.data.tools).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "echo", tags: ["x"], folder_id: fid("b"), registered: true }),
        expect.objectContaining({ name: "gone-tool", hidden: true, registered: false }),
      ]),
    );
    // Again, renamed: updated in place.
    expect((await importRows([folderRow(fid("a"), "Top renamed")])).status).toBe(200);
    expect(await count("SELECT COUNT(*) AS n FROM tool_meta_folders WHERE folder_id = ? AND name = 'Top renamed'", fid("a"))).toBe(1);
  });

  it.each([
    ["a bad folder id", [folderRow("SECRETID", "x")], "sections.tool-meta.0.folder_id"],
    ["a parent that exists nowhere", [folderRow(fid("c"), "x", fid("d"))], "sections.tool-meta.0.parent_id"],
    ["a cycle within the document", [folderRow(fid("e"), "e", fid("f")), folderRow(fid("f"), "f", fid("e"))], "cycle"],
    ["two folders of one name in one parent", [folderRow(fid("1"), "Twin"), folderRow(fid("2"), "Twin")], "same parent folder"],
    ["a repeated folder id", [folderRow(fid("3"), "x"), folderRow(fid("3"), "y")], "sections.tool-meta.1.folder_id"],
    ["a tool row in a folder that exists nowhere", [toolRow("echo", { folder_id: fid("9") })], "sections.tool-meta.0.folder_id"],
    ["a tool row with repeated tags", [toolRow("echo", { tags: ["a", "a"] })], "sections.tool-meta.0.tags"],
    ["a tool name that is no tool name", [toolRow("SECRET NAME")], "sections.tool-meta.0.name"],
  ])("400 for %s, naming where, writing nothing", async (_what, rows, where) => {
    const before = await count("SELECT COUNT(*) AS n FROM tool_meta_folders");
    const r = await importRows(rows);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toContain(where);
    expect(r.body.error).not.toContain("SECRET");
    expect(await count("SELECT COUNT(*) AS n FROM tool_meta_folders")).toBe(before);
  });

  it("refuses a document folder that would cycle with the deployment's tree", async () => {
    const key = await admin();
    const top = (await call("POST", "/api/tool-meta/folders", { key, body: { name: uniq("dep") } })).body.data.folder_id;
    const child = (await call("POST", "/api/tool-meta/folders", { key, body: { name: "child", parent_id: top } })).body.data.folder_id;
    const r = await importRows([folderRow(top, "moved under its child", child)]);
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("cycle");
  });

  it("export carries it; without TOOL_META_STORE_URL it is left out, and 501 when named", async () => {
    const key = await admin();
    const all = await call("POST", "/api/backup/export", { key, body: { sections: ["tool-meta"] } });
    expect(all.status).toBe(200);
    expect(all.body.sections["tool-meta"].length).toBeGreaterThan(0);
    const post = (body: unknown) =>
      fetchWithEnv(
        { ...env, TOOL_META_STORE_URL: "" },
        new Request(`${BASE}/api/backup/export`, {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    expect(Object.keys(((await (await post({})).json()) as any).sections)).not.toContain("tool-meta");
    const named = await post({ sections: ["tool-meta"] });
    expect(named.status).toBe(501);
    expect(await named.json()).toMatchObject({ code: "tool-meta-not-configured" });
  });
});
