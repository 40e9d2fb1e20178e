/**
 * What uses a preset by name (`GET /api/presets/{name}/referees`), all read from D1 in
 * one batch: conversation routes targeting it, its target conversation config, hooks and
 * schedules firing it, other presets whose active version stands on it, llm agents offering it in
 * `tool_names`, and sub-MCP endpoints exposing it.
 *
 * `movable` says whether a rename with `move_references` rewrites the reference (in the same D1
 * batch as the rename). Schedules are not: each lives in its Schedule object, whose spec the D1 row
 * only mirrors, so a rewrite of the row alone would not change what fires. Other presets are
 * not: their versions are immutable.
 */
import { z } from "zod";
import { type SqlFragment, batch, d1, rowsOf, sql } from "../../platform/persistence/d1";

export const REFEREE_KINDS = ["route", "conversation_config", "hook", "schedule", "preset", "agent", "sub_mcp"] as const;
export type RefereeKind = (typeof REFEREE_KINDS)[number];

export const PresetReferee = z.object({
  kind: z.enum(REFEREE_KINDS),
  /** The referee's own name: a route name, the config's target name, a hook, schedule, preset or agent name, a sub-MCP slug. */
  name: z.string(),
  movable: z.boolean(),
});
export type PresetReferee = z.infer<typeof PresetReferee>;

const UNMOVABLE: ReadonlySet<RefereeKind> = new Set(["schedule", "preset"]);

/** Per kind, the statement selecting the names of what refers to preset `name`. */
export const REFEREE_QUERIES: Record<RefereeKind, (name: string) => SqlFragment> = {
  route: (name) => sql`SELECT route_name AS name FROM routes WHERE target_kind = 'tool' AND target_name = ${name}`,
  conversation_config: (name) => sql`SELECT target_name AS name FROM conversation_configs WHERE target_kind = 'tool' AND target_name = ${name}`,
  hook: (name) => sql`SELECT name FROM hooks WHERE tool = ${name}`,
  schedule: (name) => sql`SELECT name FROM schedules WHERE tool_name = ${name}`,
  preset: (name) => sql`SELECT p.name AS name FROM presets p JOIN preset_versions v ON v.name = p.name AND v.version = p.current_version
           WHERE json_extract(v.body, '$.base_tool') = ${name} AND p.name != ${name}`,
  agent: (name) => sql`SELECT a.title AS name FROM agent_declarations a
          WHERE a.kind = 'llm' AND EXISTS (SELECT 1 FROM json_each(a.config, '$.tool_names') j WHERE j.value = ${name})`,
  sub_mcp: (name) => sql`SELECT s.slug AS name FROM sub_mcp_apps s WHERE EXISTS (SELECT 1 FROM json_each(s.tools) j WHERE j.value = ${name})`,
};

const NameRow = z.object({ name: z.string() });

export function isMovable(kind: RefereeKind): boolean {
  return !UNMOVABLE.has(kind);
}

/** Everything that refers to `name`, by kind then name. */
export async function presetReferees(db: D1Database, name: string): Promise<PresetReferee[]> {
  const reads = REFEREE_KINDS.map((k) => d1(db)`${REFEREE_QUERIES[k](name)} ORDER BY 1`);
  const results = await batch(db, reads);
  return REFEREE_KINDS.flatMap((kind, i) => rowsOf(NameRow, results[i].results, reads[i].text).map((r) => ({ kind, name: r.name, movable: isMovable(kind) })));
}

/** `kind 'name'` for messages: names of stored objects the caller may read through this door anyway. */
export function describeReferees(list: readonly PresetReferee[], max = 10): string {
  // A config's name is the preset's own, so it is not repeated.
  const shown = list.slice(0, max).map((r) => (r.kind === "conversation_config" ? "its conversation config" : `${r.kind} '${r.name}'`));
  return list.length > max ? `${shown.join(", ")} and ${list.length - max} more` : shown.join(", ");
}
