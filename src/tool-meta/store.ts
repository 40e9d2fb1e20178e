/**
 * Tool metadata in D1 (migrations/0019_tool_meta.sql; docs/tool-metadata.md). The rules that must
 * hold under concurrent writes are written into the statements themselves: a move checks for a
 * cycle in the same UPDATE (a recursive walk up from the new parent), a delete removes a folder
 * only while it is empty, a tool row names a folder only while the folder exists, and sibling names
 * are a unique index. The pure checks (src/tool-meta/folders.ts) give the precise refusal first.
 */
import { z } from "zod";
import { badRequest, conflict, notFound } from "../platform/http/errors";
import { all, d1, exists, first, run, trusted } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { MAX_FOLDERS, MAX_FOLDER_DEPTH, type ParentMap, depthOf, tooDeepAfterMove, wouldCycle } from "./folders";
import { mergePatch, type Json } from "./merge-patch";
import {
  Badges,
  DEFAULT_FIELDS,
  FolderView,
  Tags,
  type ToolMetaFields,
  ToolMetaFields as FieldsSchema,
  type ToolMetaPatch,
  isDefault,
  newFolderId,
} from "./model";

const FOLDER_COLUMNS = trusted("folder_id, name, parent_id, created_at, updated_at");
const ParentRow = z.object({ folder_id: z.string(), parent_id: z.string().nullable() });

export const folderNotFound = () => notFound("folder not found");
const parentNotFound = () => notFound("parent folder not found");
const siblingTaken = () => conflict("a folder of that name already exists in that parent folder");

function isUniqueViolation(err: unknown): boolean {
  return err instanceof Error && /UNIQUE constraint failed/i.test(err.message);
}

export async function listFolders(db: D1Database): Promise<FolderView[]> {
  return all(FolderView, d1(db)`SELECT ${FOLDER_COLUMNS} FROM tool_meta_folders ORDER BY COALESCE(parent_id, ''), name`);
}

async function parentMap(db: D1Database): Promise<Map<string, string | null>> {
  const results = await all(ParentRow, d1(db)`SELECT folder_id, parent_id FROM tool_meta_folders`);
  return new Map(results.map((r) => [r.folder_id, r.parent_id]));
}

async function getFolder(db: D1Database, id: string): Promise<FolderView | null> {
  return first(FolderView, d1(db)`SELECT ${FOLDER_COLUMNS} FROM tool_meta_folders WHERE folder_id = ${id}`);
}

async function siblingExists(db: D1Database, parent: string | null, name: string, except?: string): Promise<boolean> {
  return exists(
    d1(db)`SELECT 1 AS x FROM tool_meta_folders WHERE COALESCE(parent_id, '') = ${parent ?? ""} AND name = ${name} AND folder_id <> ${except ?? ""}`,
  );
}

export async function createFolder(db: D1Database, name: string, parent: string | null, now: string): Promise<FolderView> {
  const parents = await parentMap(db);
  if (parents.size >= MAX_FOLDERS) throw conflict(`at most ${MAX_FOLDERS} folders`);
  if (parent !== null && !parents.has(parent)) throw parentNotFound();
  if (depthOf(parents, parent) + 1 > MAX_FOLDER_DEPTH) throw conflict(`folders nest at most ${MAX_FOLDER_DEPTH} deep`);
  if (await siblingExists(db, parent, name)) throw siblingTaken();
  const folder: FolderView = { folder_id: newFolderId(), name, parent_id: parent, created_at: now, updated_at: now };
  try {
    // The parent must still exist as the row goes in.
    const meta = await run(
      d1(db)`INSERT INTO tool_meta_folders (${FOLDER_COLUMNS}) SELECT ${folder.folder_id}, ${name}, ${parent}, ${now}, ${now}
        WHERE ${parent} IS NULL OR EXISTS (SELECT 1 FROM tool_meta_folders WHERE folder_id = ${parent})`,
    );
    if (!meta.changes) throw parentNotFound();
  } catch (err) {
    if (isUniqueViolation(err)) throw siblingTaken();
    throw err;
  }
  return folder;
}

export async function renameFolder(db: D1Database, id: string, name: string, now: string): Promise<FolderView> {
  const folder = await getFolder(db, id);
  if (!folder) throw folderNotFound();
  if (await siblingExists(db, folder.parent_id, name, id)) throw siblingTaken();
  try {
    const meta = await run(d1(db)`UPDATE tool_meta_folders SET name = ${name}, updated_at = ${now} WHERE folder_id = ${id}`);
    if (!meta.changes) throw folderNotFound();
  } catch (err) {
    if (isUniqueViolation(err)) throw siblingTaken();
    throw err;
  }
  return { ...folder, name, updated_at: now };
}

export async function moveFolder(db: D1Database, id: string, parent: string | null, now: string): Promise<FolderView> {
  const parents: ParentMap = await parentMap(db);
  const folder = await getFolder(db, id);
  if (!folder) throw folderNotFound();
  if (parent !== null && !parents.has(parent)) throw parentNotFound();
  if (parent === id || wouldCycle(parents, id, parent)) throw conflict("a folder cannot move into itself or one of its descendants");
  if (tooDeepAfterMove(parents, id, parent)) throw conflict(`folders nest at most ${MAX_FOLDER_DEPTH} deep`);
  if (await siblingExists(db, parent, folder.name, id)) throw siblingTaken();
  try {
    // The cycle check again, inside the write: a concurrent move cannot slip a cycle in between.
    const meta = await run(
      d1(db)`UPDATE tool_meta_folders SET parent_id = ${parent}, updated_at = ${now} WHERE folder_id = ${id}
           AND (${parent} IS NULL OR EXISTS (SELECT 1 FROM tool_meta_folders WHERE folder_id = ${parent}))
           AND NOT EXISTS (
             WITH RECURSIVE up(id) AS (
               SELECT ${parent}
               UNION
               SELECT f.parent_id FROM tool_meta_folders f JOIN up ON f.folder_id = up.id WHERE f.parent_id IS NOT NULL
             )
             SELECT 1 FROM up WHERE id = ${id}
           )`,
    );
    if (!meta.changes) throw conflict("the folder tree changed meanwhile; the move would make a cycle or its parent is gone");
  } catch (err) {
    if (isUniqueViolation(err)) throw siblingTaken();
    throw err;
  }
  return { ...folder, parent_id: parent, updated_at: now };
}

/** Deletes an empty folder: 404 unknown, 409 while it holds folders or tools. */
export async function deleteFolder(db: D1Database, id: string): Promise<void> {
  const meta = await run(
    d1(db)`DELETE FROM tool_meta_folders WHERE folder_id = ${id}
         AND NOT EXISTS (SELECT 1 FROM tool_meta_folders WHERE parent_id = ${id})
         AND NOT EXISTS (SELECT 1 FROM tool_meta_tools WHERE folder_id = ${id})`,
  );
  if (meta.changes) return;
  if (!(await getFolder(db, id))) throw folderNotFound();
  throw conflict("the folder is not empty: move or delete its folders and tools first");
}

// --- tool rows ------------------------------------------------------------------------------

const ToolRow = z.object({
  tool_name: z.string(),
  tags: z.string(),
  badges: z.string(),
  hidden: z.number().nullable(),
  folder_id: z.string().nullable(),
  updated_at: z.string(),
});
type ToolRow = z.infer<typeof ToolRow>;

export interface StoredToolMeta extends ToolMetaFields {
  name: string;
  updated_at: string;
}

function fromRow(r: ToolRow): StoredToolMeta {
  return {
    name: r.tool_name,
    tags: parseStored(Tags, r.tags, "tool_meta_tools row"),
    badges: parseStored(Badges, r.badges, "tool_meta_tools row"),
    hidden: r.hidden === null ? null : r.hidden === 1,
    folder_id: r.folder_id,
    updated_at: r.updated_at,
  };
}

const TOOL_COLUMNS = trusted("tool_name, tags, badges, hidden, folder_id, updated_at");

export async function listToolMeta(db: D1Database): Promise<StoredToolMeta[]> {
  return (await all(ToolRow, d1(db)`SELECT ${TOOL_COLUMNS} FROM tool_meta_tools ORDER BY tool_name`)).map(fromRow);
}

export async function getToolMeta(db: D1Database, name: string): Promise<StoredToolMeta | null> {
  const r = await first(ToolRow, d1(db)`SELECT ${TOOL_COLUMNS} FROM tool_meta_tools WHERE tool_name = ${name}`);
  return r ? fromRow(r) : null;
}

/** The row after `patch` (RFC 7396 over the stored fields, then checked whole). */
export function patchedFields(current: ToolMetaFields, patch: ToolMetaPatch): ToolMetaFields {
  const merged = mergePatch(current as unknown as Json, patch as unknown as Json);
  const parsed = FieldsSchema.safeParse(merged);
  if (!parsed.success) throw badRequest("invalid body: the patched row is not valid");
  return parsed.data;
}

/**
 * Applies a merge patch to `name`'s row and answers the row. A row back at every default is
 * deleted. A folder_id must name a folder that exists as the row is written (404 otherwise).
 */
export async function patchToolMeta(db: D1Database, name: string, patch: ToolMetaPatch, now: string): Promise<StoredToolMeta> {
  const stored = await getToolMeta(db, name);
  const current: ToolMetaFields = stored ? { tags: stored.tags, badges: stored.badges, hidden: stored.hidden, folder_id: stored.folder_id } : DEFAULT_FIELDS;
  const fields = patchedFields(current, patch);
  if (isDefault(fields)) {
    await run(d1(db)`DELETE FROM tool_meta_tools WHERE tool_name = ${name}`);
    return { name, ...fields, updated_at: now };
  }
  const hidden = fields.hidden === null ? null : fields.hidden ? 1 : 0;
  const meta = await run(
    d1(
      db,
    )`INSERT INTO tool_meta_tools (${TOOL_COLUMNS}) SELECT ${name}, ${JSON.stringify(fields.tags)}, ${JSON.stringify(fields.badges)}, ${hidden}, ${fields.folder_id}, ${now}
         WHERE ${fields.folder_id} IS NULL OR EXISTS (SELECT 1 FROM tool_meta_folders WHERE folder_id = ${fields.folder_id})
       ON CONFLICT(tool_name) DO UPDATE SET tags = excluded.tags, badges = excluded.badges, hidden = excluded.hidden,
         folder_id = excluded.folder_id, updated_at = excluded.updated_at`,
  );
  if (!meta.changes) throw folderNotFound();
  return { name, ...fields, updated_at: now };
}

export async function deleteToolMeta(db: D1Database, name: string): Promise<boolean> {
  const meta = await run(d1(db)`DELETE FROM tool_meta_tools WHERE tool_name = ${name}`);
  return (meta.changes ?? 0) > 0;
}
