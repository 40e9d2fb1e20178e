/**
 * What the tool metadata reads answer (docs/tool-metadata.md): the overlay itself
 * (`GET /api/tool-meta`) and every registered tool's labels (`GET /api/tools/tags`).
 */
import { z } from "zod";
import { listToolNames } from "../targets/tools/registry";
import { DEFAULT_FIELDS, FolderView, type ToolMetaView, ToolMetaView as ViewSchema, type ToolTags } from "./model";
import { type StoredToolMeta, listFolders, listToolMeta } from "./store";

export const ToolMetaOverview = z.object({ folders: z.array(FolderView), tools: z.array(ViewSchema) }).strict();
export type ToolMetaOverview = z.infer<typeof ToolMetaOverview>;

export function viewOf(row: StoredToolMeta, registered: boolean): ToolMetaView {
  return { name: row.name, tags: row.tags, badges: row.badges, hidden: row.hidden, folder_id: row.folder_id, registered, updated_at: row.updated_at };
}

/** Every folder and every stored tool row (also rows whose tool is gone: `registered: false`). */
export async function toolMetaOverview(db: D1Database): Promise<ToolMetaOverview> {
  const [folders, rows, names] = await Promise.all([listFolders(db), listToolMeta(db), listToolNames(db)]);
  const registered = new Set(names);
  return { folders, tools: rows.map((r) => viewOf(r, registered.has(r.name))) };
}

/** Every registered tool, sorted, with its tags, badges and hidden flag (defaults without a row or a store). */
export async function toolTags(db: D1Database, overlayOn: boolean): Promise<ToolTags[]> {
  const [names, rows] = await Promise.all([listToolNames(db), overlayOn ? listToolMeta(db) : Promise.resolve([])]);
  const byName = new Map(rows.map((r) => [r.name, r]));
  return names.map((name) => {
    const r = byName.get(name) ?? DEFAULT_FIELDS;
    return { name, tags: r.tags, hidden: r.hidden, badges: r.badges };
  });
}
