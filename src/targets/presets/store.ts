/** Presets in D1: one row per preset (active and latest version), one per immutable version. */
import { z } from "zod";
import { type KeyWithOwner, keyColumns, parsePrefixedKey } from "../../access-control/key-store";
import { storedByUserIdSql } from "../../access-control/stored-by";
import { HttpError, conflict } from "../../platform/http/errors";
import { type Statement, all, batch, d1, first, rowsOf, run, sql, trusted } from "../../platform/persistence/d1";
import { parseStored } from "../../platform/persistence/stored-json";
import { isBuiltinTool } from "../tools/builtins";
import { type PresetBody, type PresetView, presetBodySchema } from "./model";
import { must } from "../../platform/must";

const PresetRow = z.object({
  name: z.string(),
  current_version: z.number(),
  latest_version: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
  body: z.string(),
});
type PresetRow = z.infer<typeof PresetRow>;
/** The preset row with who made its version active and that key's columns (`sk_…`, `so_…`), kept for `parsePrefixedKey`. */
const RunnableRow = z.looseObject({ ...PresetRow.shape, stored_by: z.string() });
const VersionRow = z.object({ version: z.number(), body: z.string(), tags: z.string(), created_at: z.string() });
type VersionRow = z.infer<typeof VersionRow>;
const VersionNumberRow = z.object({ version: z.number() });

export interface StoredVersion {
  version: number;
  body: PresetBody;
  tags: string[];
  created_at: string;
}

function parseBody(json: string): PresetBody {
  return parseStored(presetBodySchema, json, "preset_versions row");
}

const tagsRow = z.array(z.string());
function parseTags(json: string): string[] {
  return parseStored(tagsRow, json, "preset_versions tags");
}

function toView(r: PresetRow): PresetView {
  const body = parseBody(r.body);
  return { name: r.name, ...body, current_version: r.current_version, latest_version: r.latest_version, created_at: r.created_at, updated_at: r.updated_at };
}

function toVersion(r: VersionRow): StoredVersion {
  return { version: r.version, body: parseBody(r.body), tags: parseTags(r.tags), created_at: r.created_at };
}

const PRESET_SELECT = sql`SELECT p.name, p.current_version, p.latest_version, p.created_at, p.updated_at, v.body
  FROM presets p JOIN preset_versions v ON v.name = p.name AND v.version = p.current_version`;

export const presetNotFound = () => new HttpError(404, "preset not found");
export const versionNotFound = () => new HttpError(404, "preset version not found");

export async function getPreset(db: D1Database, name: string): Promise<PresetView | null> {
  const r = await first(PresetRow, d1(db)`${PRESET_SELECT} WHERE p.name = ${name}`);
  return r ? toView(r) : null;
}

/** A preset as a dispatch runs it: its active version, who made that version active, and that key's live record and owner. */
export interface RunnablePreset {
  view: PresetView;
  stored_by: string;
  /** The stored-by key and its owner as read with the preset (null: no such key). */
  holder: KeyWithOwner | null;
}

/**
 * The preset with its stored-by key and owner in one statement, so the dispatch that checks the
 * stored-by key's grants (src/access-control/stored-by.ts) costs no round trip beyond the preset's own read.
 */
export async function getRunnablePreset(db: D1Database, name: string): Promise<RunnablePreset | null> {
  const r = await first(
    RunnableRow,
    d1(
      db,
    )`SELECT p.name, p.current_version, p.latest_version, p.created_at, p.updated_at, v.body, p.stored_by, ${trusted(keyColumns("sk", "sk_"))}, ${trusted(keyColumns("so", "so_"))}
       FROM presets p JOIN preset_versions v ON v.name = p.name AND v.version = p.current_version
       LEFT JOIN api_keys sk ON sk.user_id = ${trusted(storedByUserIdSql("p.stored_by"))} LEFT JOIN api_keys so ON so.user_id = sk.owner_user_id
       WHERE p.name = ${name}`,
  );
  if (!r) return null;
  return { view: toView(r), stored_by: r.stored_by, holder: parsePrefixedKey(r, "sk_", "so_") };
}

export async function listPresets(db: D1Database): Promise<PresetView[]> {
  return (await all(PresetRow, d1(db)`${PRESET_SELECT} ORDER BY p.name`)).map(toView);
}

/** A `presets` row: the version pointers and times (its bodies are `preset_versions` rows). */
export interface PresetPointers {
  name: string;
  current_version: number;
  latest_version: number;
  created_at: string;
  updated_at: string;
  /** Who made the active version active (src/access-control/stored-by.ts). */
  stored_by: string;
}

/**
 * The write of a `presets` row as a statement. Its two callers want different writes on purpose:
 * - "create" (the create door) inserts only, and only while no declared tool has the name: that
 *   check is in the write so a concurrent tool declaration cannot slip in (the statement then
 *   writes nothing). An existing preset fails the insert on its key, which the door answers 409.
 * - "restore" (a backup import) creates the row or replaces an existing row's pointers, keeping
 *   its `created_at`. It checked the name against tools when it validated, and it writes the
 *   preset's versions beside this row unconditionally, so a guard that skipped the row would
 *   leave versions without their preset.
 */
export function presetRowStatement(db: D1Database, p: PresetPointers, mode: "create" | "restore"): D1PreparedStatement {
  return presetRowWrite(db, p, mode).prepared();
}

function presetRowWrite(db: D1Database, p: PresetPointers, mode: "create" | "restore"): Statement {
  // `WHERE true` keeps the SELECT's WHERE clause present, which SQLite needs before ON CONFLICT.
  const write =
    mode === "create"
      ? sql`WHERE NOT EXISTS (SELECT 1 FROM tool_declarations WHERE title = ${p.name})`
      : sql`WHERE true ON CONFLICT(name) DO UPDATE SET current_version = excluded.current_version, latest_version = excluded.latest_version, updated_at = excluded.updated_at, stored_by = excluded.stored_by`;
  return d1(db)`INSERT INTO presets (name, current_version, latest_version, created_at, updated_at, stored_by)
    SELECT ${p.name}, ${p.current_version}, ${p.latest_version}, ${p.created_at}, ${p.updated_at}, ${p.stored_by} ${write}`;
}

/**
 * The insert of one `preset_versions` row as a statement. With `onlyAfterInsert` it writes only
 * when the statement just before it in the same batch wrote a row (`changes()` is that statement's
 * row count, in the same transaction): the create door's first version, whose preset row the
 * tool-name guard may have skipped. A backup import, which writes its preset row unconditionally,
 * passes false. (Appending a version is not this insert: it takes the number inside the write.)
 */
export function insertVersionStatement(
  db: D1Database,
  name: string,
  v: { version: number; body: PresetBody; tags: string[]; created_at: string },
  { onlyAfterInsert }: { onlyAfterInsert: boolean },
): D1PreparedStatement {
  return insertVersionWrite(db, name, v, { onlyAfterInsert }).prepared();
}

function insertVersionWrite(
  db: D1Database,
  name: string,
  v: { version: number; body: PresetBody; tags: string[]; created_at: string },
  { onlyAfterInsert }: { onlyAfterInsert: boolean },
): Statement {
  return d1(db)`INSERT INTO preset_versions (name, version, body, tags, created_at)
    SELECT ${name}, ${v.version}, ${JSON.stringify(v.body)}, ${JSON.stringify(v.tags)}, ${v.created_at} WHERE ${trusted(onlyAfterInsert ? "changes() = 1" : "true")}`;
}

/**
 * Creates a preset at version 1. A preset name may not shadow a tool: a built-in or declared
 * tool's name is 409, checked in the insert itself so a concurrent tool declaration cannot
 * slip in between; an existing preset is 409 too (new versions go through /versions).
 */
export async function createPreset(db: D1Database, name: string, body: PresetBody, nowIso: string, storedBy: string): Promise<PresetView> {
  if (isBuiltinTool(name)) throw conflict("name is the name of a built-in tool");
  let results: D1Result[];
  try {
    results = await batch(db, [
      presetRowWrite(db, { name, current_version: 1, latest_version: 1, created_at: nowIso, updated_at: nowIso, stored_by: storedBy }, "create"),
      insertVersionWrite(db, name, { version: 1, body, tags: [], created_at: nowIso }, { onlyAfterInsert: true }),
    ]);
  } catch (err) {
    if (String(err).includes("UNIQUE")) throw conflict("a preset with this name already exists");
    throw err;
  }
  if ((results[0].meta.changes ?? 0) === 0) throw conflict("name is the name of a declared tool");
  return must(await getPreset(db, name), "the preset just written");
}

export async function deletePreset(db: D1Database, name: string): Promise<boolean> {
  const [, res] = await batch(db, [d1(db)`DELETE FROM preset_versions WHERE name = ${name}`, d1(db)`DELETE FROM presets WHERE name = ${name}`]);
  return (res.meta.changes ?? 0) > 0;
}

export async function listVersions(db: D1Database, name: string): Promise<StoredVersion[]> {
  return (await all(VersionRow, d1(db)`SELECT version, body, tags, created_at FROM preset_versions WHERE name = ${name} ORDER BY version`)).map(toVersion);
}

export async function getVersion(db: D1Database, name: string, version: number): Promise<StoredVersion | null> {
  const r = await first(VersionRow, d1(db)`SELECT version, body, tags, created_at FROM preset_versions WHERE name = ${name} AND version = ${version}`);
  return r ? toVersion(r) : null;
}

/**
 * Appends `body` as version latest+1 and makes it active, recording `storedBy` as who did. The
 * number is taken inside the write, so two concurrent appends get distinct versions rather than colliding.
 */
export async function appendVersion(db: D1Database, name: string, body: PresetBody, nowIso: string, storedBy: string): Promise<StoredVersion> {
  const insert = d1(db)`INSERT INTO preset_versions (name, version, body, tags, created_at)
         SELECT name, latest_version + 1, ${JSON.stringify(body)}, '[]', ${nowIso} FROM presets WHERE name = ${name} RETURNING version`;
  const [inserted] = await batch(db, [
    insert,
    d1(
      db,
    )`UPDATE presets SET latest_version = latest_version + 1, current_version = latest_version + 1, updated_at = ${nowIso}, stored_by = ${storedBy} WHERE name = ${name}`,
  ]);
  const version = rowsOf(VersionNumberRow, inserted.results.slice(0, 1), insert.text)[0]?.version;
  if (version === undefined) throw presetNotFound();
  return must(await getVersion(db, name, version), "the preset version just written");
}

/** Makes an existing version active without writing a version, recording `storedBy` as who did (404 for either unknown). */
export async function setCurrentVersion(db: D1Database, name: string, version: number, nowIso: string, storedBy: string): Promise<void> {
  const meta = await run(
    d1(db)`UPDATE presets SET current_version = ${version}, updated_at = ${nowIso}, stored_by = ${storedBy}
       WHERE name = ${name} AND EXISTS (SELECT 1 FROM preset_versions WHERE name = ${name} AND version = ${version})`,
  );
  if ((meta.changes ?? 0) > 0) return;
  throw (await getPreset(db, name)) ? versionNotFound() : presetNotFound();
}

/** Replaces one version's tags (the only mutable part of a version). */
export async function setVersionTags(db: D1Database, name: string, version: number, tags: string[]): Promise<void> {
  const meta = await run(d1(db)`UPDATE preset_versions SET tags = ${JSON.stringify(tags)} WHERE name = ${name} AND version = ${version}`);
  if ((meta.changes ?? 0) > 0) return;
  throw (await getPreset(db, name)) ? versionNotFound() : presetNotFound();
}
