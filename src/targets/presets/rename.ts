/**
 * `POST /api/presets/{name}/rename` (docs/targets.md "Renaming a preset"): one D1 batch
 * moves the preset (its row and every version, its tool metadata row) to the new name and, with
 * `move_references`, rewrites what refers to it (routes, its conversation config, hooks, llm
 * agents' `tool_names`, sub-MCP tool lists).
 *
 * Refused (nothing written): an unknown preset 404; the same name 400, an agent's name 400, a tool
 * or preset name 409; a preset an installed plugin owns 409 (the plugin names it); any reference
 * without `move_references` 409 naming them; with it, a reference that cannot move (a schedule, a
 * preset standing on this one) 409 naming them, and a reference in an area the caller may not
 * write 403. The batch opens with a guard that fails it whole when any of these has appeared since
 * the checks, so a concurrent write can never slip between the check and the rename.
 *
 * Not moved, on purpose: grants naming the preset (`tool:<name>` on keys and roles: an authority
 * change is never a side effect), past runs and tool runs (history keeps the name it ran under),
 * and data keyed by the target name (state records, the person directory, pending saves).
 */
import { z } from "zod";
import { HttpError, badRequest, conflict } from "../../platform/http/errors";
import { type SqlFragment, type Statement, batch, d1, exists, first, join, sql } from "../../platform/persistence/d1";
import { getDeclaredAgent } from "../agents/declarations";
import { isBuiltinTool } from "../tools/builtins";
import { resolveTool } from "../tools/registry";
import { type PresetReferee, REFEREE_KINDS, REFEREE_QUERIES, type RefereeKind, describeReferees, isMovable, presetReferees } from "./preset-uses";
import { getPreset, presetNotFound } from "./store";

export interface RenameRequest {
  from: string;
  to: string;
  move: boolean;
  /** The referee kinds the caller may rewrite (its write grants on their areas). */
  mayMove: ReadonlySet<RefereeKind>;
  /** Who renames: the preset runs under the new name bounded by this key (src/access-control/stored-by.ts). */
  storedBy: string;
}

/** Which grant moving a kind of reference needs, for the 403's message. */
export const MOVE_GRANT: Record<RefereeKind, string> = {
  route: "conversations:write",
  conversation_config: "conversations:write",
  hook: "hooks:write",
  schedule: "schedules:write",
  preset: "presets:write",
  agent: "admin (agent declarations are admin-only)",
  sub_mcp: "admin (sub-MCP endpoints are admin-only)",
};

const RefRow = z.object({ ref: z.string() });

const ownerOf = (db: D1Database, name: string) => first(RefRow, d1(db)`SELECT ref FROM marketplace_owned WHERE kind = 'preset' AND name = ${name}`);

/** Every check before the batch; answers the references that will move. Throws the refusal. */
export async function planRename(db: D1Database, req: RenameRequest): Promise<PresetReferee[]> {
  if (!(await getPreset(db, req.from))) throw presetNotFound();
  if (req.to === req.from) throw badRequest("invalid body: new_name: is the preset's current name");
  if (isBuiltinTool(req.to)) throw conflict("new_name is the name of a built-in tool");
  if (await resolveTool(db, req.to)) throw conflict("new_name is the name of a registered tool or preset");
  if (await getDeclaredAgent(db, req.to)) throw badRequest("invalid body: new_name: is the name of an agent (an agent's run tool is named by it)");
  const owner = await ownerOf(db, req.from);
  if (owner) throw conflict(`the preset belongs to installed plugin ${owner.ref}; rename it in the plugin`);
  const referees = await presetReferees(db, req.from);
  if (!req.move) {
    if (referees.length) {
      throw new HttpError(
        409,
        `the preset is referenced by ${describeReferees(referees)}; pass move_references: true to move them with it`,
        "preset-referenced",
        { referees },
      );
    }
    return [];
  }
  const fixed = referees.filter((r) => !r.movable);
  if (fixed.length) {
    throw new HttpError(
      409,
      `these references cannot move with the preset: ${describeReferees(fixed)} (a schedule lives in its Schedule object: re-create it under the new name; preset versions are immutable: append a version standing on the new name)`,
      "preset-referenced",
      { referees: fixed },
    );
  }
  const denied = [...new Set(referees.filter((r) => !req.mayMove.has(r.kind)).map((r) => MOVE_GRANT[r.kind]))];
  if (denied.length) throw new HttpError(403, `moving the references needs ${denied.join(" and ")}`);
  const config = await exists(d1(db)`SELECT 1 AS one FROM conversation_configs WHERE target_kind = 'tool' AND target_name = ${req.to}`);
  if (config && referees.some((r) => r.kind === "conversation_config")) throw conflict("a conversation config for new_name exists already; delete it first");
  return referees;
}

/** The guard's condition: what must not hold when the batch runs (see the module comment). */
function guardCondition(req: RenameRequest): SqlFragment {
  const whenAny = (query: SqlFragment) => sql`EXISTS (${query})`;
  const parts = [
    whenAny(sql`SELECT 1 FROM tool_declarations WHERE title = ${req.to}`),
    whenAny(sql`SELECT 1 FROM api_tools WHERE title = ${req.to}`),
    whenAny(sql`SELECT 1 FROM agent_declarations WHERE title = ${req.to}`),
    whenAny(sql`SELECT 1 FROM marketplace_owned WHERE kind = 'preset' AND name = ${req.from}`),
  ];
  for (const kind of REFEREE_KINDS) {
    const refused = !req.move || !isMovable(kind) || !req.mayMove.has(kind);
    if (refused) parts.push(whenAny(REFEREE_QUERIES[kind](req.from)));
  }
  if (req.move) {
    parts.push(
      sql`(${whenAny(REFEREE_QUERIES.conversation_config(req.from))} AND ${whenAny(sql`SELECT 1 FROM conversation_configs WHERE target_kind = 'tool' AND target_name = ${req.to}`)})`,
    );
  }
  return join(parts, " OR ");
}

/** The rename's statements, guard first. Exported for its tests. */
export function renameStatements(db: D1Database, req: RenameRequest, nowIso: string): D1PreparedStatement[] {
  return renameWrites(db, req, nowIso).map((s) => s.prepared());
}

function renameWrites(db: D1Database, req: RenameRequest, nowIso: string): Statement[] {
  const { from, to, storedBy } = req;
  const q = d1(db);
  const writes = [
    q`INSERT INTO preset_rename_guard (violation) SELECT 1 WHERE ${guardCondition(req)}`,
    q`INSERT INTO presets (name, current_version, latest_version, created_at, updated_at, stored_by) SELECT ${to}, current_version, latest_version, created_at, ${nowIso}, ${storedBy} FROM presets WHERE name = ${from}`,
    q`INSERT INTO preset_versions (name, version, body, tags, created_at) SELECT ${to}, version, body, tags, created_at FROM preset_versions WHERE name = ${from}`,
    q`DELETE FROM preset_versions WHERE name = ${from}`,
    q`DELETE FROM presets WHERE name = ${from}`,
    // The preset's own metadata overlay row follows it (unless the new name already has one).
    q`UPDATE tool_meta_tools SET tool_name = ${to}, updated_at = ${nowIso} WHERE tool_name = ${from} AND NOT EXISTS (SELECT 1 FROM tool_meta_tools WHERE tool_name = ${to})`,
  ];
  if (req.move) {
    writes.push(
      q`UPDATE routes SET target_name = ${to}, updated_at = ${nowIso} WHERE target_kind = 'tool' AND target_name = ${from}`,
      q`UPDATE conversation_configs SET target_name = ${to}, config = json_set(config, '$.target_name', ${to}), updated_at = ${nowIso} WHERE target_kind = 'tool' AND target_name = ${from}`,
      q`UPDATE hooks SET tool = ${to}, updated_at = ${nowIso} WHERE tool = ${from}`,
      q`UPDATE agent_declarations
         SET config = json_set(config, '$.tool_names', json((SELECT json_group_array(CASE WHEN j.value = ${from} THEN ${to} ELSE j.value END) FROM json_each(agent_declarations.config, '$.tool_names') j))),
             updated_at = ${nowIso}
       WHERE kind = 'llm' AND EXISTS (SELECT 1 FROM json_each(agent_declarations.config, '$.tool_names') j WHERE j.value = ${from})`,
      q`UPDATE sub_mcp_apps
         SET tools = (SELECT json_group_array(CASE WHEN j.value = ${from} THEN ${to} ELSE j.value END) FROM json_each(sub_mcp_apps.tools) j), updated_at = ${nowIso}
       WHERE EXISTS (SELECT 1 FROM json_each(sub_mcp_apps.tools) j WHERE j.value = ${from})`,
    );
  }
  return writes;
}

/** Renames the preset; answers the references moved. */
export async function renamePreset(db: D1Database, req: RenameRequest, nowIso: string): Promise<PresetReferee[]> {
  const moved = await planRename(db, req);
  let results: D1Result[];
  try {
    results = await batch(db, renameWrites(db, req, nowIso));
  } catch (err) {
    const text = String(err);
    if (text.includes("UNIQUE")) throw conflict("new_name is the name of a registered tool or preset");
    if (!text.includes("CHECK")) throw err;
    // Something changed since the checks: they say what, or the caller retries.
    await planRename(db, req);
    throw conflict("the preset or its references changed meanwhile; retry");
  }
  if ((results[1].meta.changes ?? 0) === 0) throw presetNotFound();
  return moved;
}
