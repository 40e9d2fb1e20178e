/**
 * The `tool-meta` section (docs/backup.md, docs/tool-metadata.md): the tool metadata overlay, its
 * folders and tool rows, as D1 keeps them. Needs `TOOL_META_STORE_URL` (501
 * `tool-meta-not-configured` when named without it).
 *
 * An import upserts by folder id and tool name in one batch. Before anything is written it checks
 * what the tables' rules would otherwise refuse halfway: ids and labels as the doors take them, a
 * folder's parent and a tool row's folder existing in the document or the deployment, sibling names
 * unique, and the merged tree (the deployment's folders with the document's on top) without a
 * cycle, at most 16 deep and 1000 folders. Tool names need not be registered: a row may outlive
 * its tool, as on the doors.
 */
import { d1 } from "../../platform/persistence/d1";
import { targetNameSchema } from "../../shared/target-names";
import { MAX_FOLDERS, MAX_FOLDER_DEPTH, ancestry } from "../../tool-meta/folders";
import { FolderId, FolderName, type FolderView, ToolMetaFields } from "../../tool-meta/model";
import { listFolders, listToolMeta } from "../../tool-meta/store";
import type { ToolMetaBackupRow } from "../rows";
import { defineSection, firstDuplicate, parseAtRow, rowFault, runBatch } from "../section";

type FolderRow = Extract<ToolMetaBackupRow, { kind: "folder" }>;
type ToolRow = Extract<ToolMetaBackupRow, { kind: "tool" }>;

const S = "tool-meta";

export const toolMetaSection = defineSection({
  name: S,
  secret: false,
  description: "Tool metadata: folders and per-tool rows (tags, badges, hidden, folder).",
  store: "tool-meta",
  async exportRows(ctx) {
    const [folders, tools] = await Promise.all([listFolders(ctx.db), listToolMeta(ctx.db)]);
    return [
      ...folders.map((f): FolderRow => ({ kind: "folder", ...f })),
      ...tools.map(
        (t): ToolRow => ({
          kind: "tool",
          name: t.name,
          tags: t.tags,
          badges: t.badges,
          hidden: t.hidden,
          folder_id: t.folder_id,
          updated_at: t.updated_at,
        }),
      ),
    ];
  },
  async validate(rows, ctx) {
    const deployed = await listFolders(ctx.db);
    const folders = rows.flatMap((r, i) => (r.kind === "folder" ? [{ r, i }] : []));
    const tools = rows.flatMap((r, i) => (r.kind === "tool" ? [{ r, i }] : []));
    for (const { r, i } of folders) {
      parseAtRow(S, i, "folder_id", FolderId, r.folder_id);
      parseAtRow(S, i, "name", FolderName, r.name);
      if (r.parent_id !== null) parseAtRow(S, i, "parent_id", FolderId, r.parent_id);
    }
    const dupFolder = firstDuplicate(folders, (f) => f.r.folder_id);
    if (dupFolder >= 0) throw rowFault(S, folders[dupFolder].i, "folder_id", "repeats the folder_id of an earlier row");
    const dupTool = firstDuplicate(tools, (t) => t.r.name);
    if (dupTool >= 0) throw rowFault(S, tools[dupTool].i, "name", "repeats the name of an earlier row");

    // The tree as it will be: the deployment's folders, the document's on top.
    const merged = new Map<string, Pick<FolderView, "name" | "parent_id">>(deployed.map((f) => [f.folder_id, f]));
    for (const { r } of folders) merged.set(r.folder_id, { name: r.name, parent_id: r.parent_id });
    if (merged.size > MAX_FOLDERS) throw rowFault(S, folders[folders.length - 1].i, null, `would make more than ${MAX_FOLDERS} folders`);
    const parents = new Map([...merged].map(([id, f]) => [id, f.parent_id]));
    const siblings = new Map<string, string>();
    for (const [id, f] of merged) {
      const k = JSON.stringify([f.parent_id ?? "", f.name]);
      const other = siblings.get(k);
      const at = folders.find((x) => x.r.folder_id === id || x.r.folder_id === other);
      if (other !== undefined && at) throw rowFault(S, at.i, "name", "is the name of another folder in the same parent folder");
      siblings.set(k, id);
    }
    for (const { r, i } of folders) {
      if (r.parent_id !== null && !merged.has(r.parent_id))
        throw rowFault(S, i, "parent_id", "names a folder that is neither in the deployment nor in this import");
    }
    // Every folder of the merged tree, so a moved folder's deployed descendants count too. The
    // deployment's own tree is sound, so a fault always has one of the document's rows above it.
    for (const id of merged.keys()) {
      const up = ancestry(parents, id);
      const cycle = (parents.get(up[up.length - 1]) ?? null) !== null;
      if (!cycle && up.length <= MAX_FOLDER_DEPTH) continue;
      const culprit = folders.find((f) => up.includes(f.r.folder_id)) ?? folders[0];
      throw rowFault(S, culprit.i, "parent_id", cycle ? "makes a cycle in the folder tree" : `nests folders more than ${MAX_FOLDER_DEPTH} deep`);
    }
    for (const { r, i } of tools) {
      parseAtRow(S, i, "name", targetNameSchema, r.name);
      const { kind: _kind, name: _name, updated_at: _at, ...fields } = r;
      parseAtRow(S, i, null, ToolMetaFields, fields);
      if (r.folder_id !== null && !merged.has(r.folder_id))
        throw rowFault(S, i, "folder_id", "names a folder that is neither in the deployment nor in this import");
    }
    return rows;
  },
  async apply(rows, ctx) {
    const q = d1(ctx.db);
    const statements = rows.map((r) =>
      r.kind === "folder"
        ? q`INSERT INTO tool_meta_folders (folder_id, name, parent_id, created_at, updated_at) VALUES (${r.folder_id}, ${r.name}, ${r.parent_id}, ${r.created_at}, ${r.updated_at})
            ON CONFLICT(folder_id) DO UPDATE SET name = excluded.name, parent_id = excluded.parent_id, created_at = excluded.created_at, updated_at = excluded.updated_at`
        : q`INSERT INTO tool_meta_tools (tool_name, tags, badges, hidden, folder_id, updated_at)
            VALUES (${r.name}, ${JSON.stringify(r.tags)}, ${JSON.stringify(r.badges)}, ${r.hidden === null ? null : r.hidden ? 1 : 0}, ${r.folder_id}, ${r.updated_at})
            ON CONFLICT(tool_name) DO UPDATE SET tags = excluded.tags, badges = excluded.badges, hidden = excluded.hidden, folder_id = excluded.folder_id, updated_at = excluded.updated_at`,
    );
    await runBatch(ctx.db, statements);
    return { applied: rows.length };
  },
});
