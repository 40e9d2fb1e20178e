/**
 * What stands on declarations a change would remove (docs/marketplace.md "Uninstall and what
 * depends on a plugin"): a conversation route targeting a removed tool, preset or agent; a preset
 * (not the plugin's own) whose active version stands on a removed HTTP tool; an llm agent (not
 * the plugin's own) listing a removed tool in `tool_names`. A name the change keeps under another
 * kind still serves a route or an agent (a preset is a tool name); a preset needs an HTTP tool.
 */
import { z } from "zod";
import { batch, d1, rowsOf } from "../platform/persistence/d1";
import type { DeclarationKind } from "./contract";
import type { OwnedDeclaration } from "./installs";
import type { Dependent } from "./refusals";

const RouteRow = z.object({ route_name: z.string(), target_kind: z.string(), target_name: z.string() });
const PresetRow = z.object({ name: z.string(), base: z.string() });
const AgentRow = z.object({ name: z.string(), tool: z.string() });

/**
 * The dependents of `removed` outside plugin `ref`. `kept` is what the plugin declares after the
 * change (nothing for an uninstall).
 */
export async function findDependents(
  db: D1Database,
  ref: string,
  removed: OwnedDeclaration[],
  kept: Array<{ kind: DeclarationKind; name: string }>,
): Promise<Dependent[]> {
  const keptTools = new Set(kept.filter((k) => k.kind !== "agent").map((k) => k.name));
  const keptHttpTools = new Set(kept.filter((k) => k.kind === "http_tool").map((k) => k.name));
  const keptAgents = new Set(kept.filter((k) => k.kind === "agent").map((k) => k.name));
  // Tool names that stop existing, HTTP tools that stop existing (a preset's base), agents that do.
  const goneTools = removed.filter((r) => r.kind !== "agent" && !keptTools.has(r.name));
  const goneHttp = removed.filter((r) => r.kind === "http_tool" && !keptHttpTools.has(r.name));
  const goneAgents = removed.filter((r) => r.kind === "agent" && !keptAgents.has(r.name));
  if (!goneTools.length && !goneHttp.length && !goneAgents.length) return [];
  const names = (list: OwnedDeclaration[]) => JSON.stringify(list.map((r) => r.name));
  const q = d1(db);
  const routesStmt = q`SELECT route_name, target_kind, target_name FROM routes
         WHERE (target_kind = 'tool' AND target_name IN (SELECT value FROM json_each(${names(goneTools)})))
            OR (target_kind = 'agent' AND target_name IN (SELECT value FROM json_each(${names(goneAgents)})))
         ORDER BY route_name`;
  const presetsStmt = q`SELECT p.name AS name, json_extract(v.body, '$.base_tool') AS base FROM presets p
         JOIN preset_versions v ON v.name = p.name AND v.version = p.current_version
         WHERE json_extract(v.body, '$.base_tool') IN (SELECT value FROM json_each(${names(goneHttp)}))
           AND NOT EXISTS (SELECT 1 FROM marketplace_owned o WHERE o.kind = 'preset' AND o.name = p.name AND o.ref = ${ref})
         ORDER BY p.name`;
  const agentsStmt = q`SELECT a.title AS name, j.value AS tool FROM agent_declarations a, json_each(a.config, '$.tool_names') j
         WHERE a.kind = 'llm' AND j.value IN (SELECT value FROM json_each(${names(goneTools)}))
           AND NOT EXISTS (SELECT 1 FROM marketplace_owned o WHERE o.kind = 'agent' AND o.name = a.title AND o.ref = ${ref})
         ORDER BY a.title`;
  const [routeResult, presetResult, agentResult] = await batch(db, [routesStmt, presetsStmt, agentsStmt]);
  const routes = rowsOf(RouteRow, routeResult.results, routesStmt.text);
  const presets = rowsOf(PresetRow, presetResult.results, presetsStmt.text);
  const agents = rowsOf(AgentRow, agentResult.results, agentsStmt.text);
  const toolKind = (name: string): DeclarationKind => goneTools.find((r) => r.name === name)?.kind ?? "http_tool";
  return [
    ...routes.map((r) => ({
      kind: "route" as const,
      name: r.route_name,
      depends_on: r.target_kind === "agent" ? { kind: "agent" as const, name: r.target_name } : { kind: toolKind(r.target_name), name: r.target_name },
    })),
    ...presets.map((r) => ({ kind: "preset" as const, name: r.name, depends_on: { kind: "http_tool" as const, name: r.base } })),
    ...agents.map((r) => ({ kind: "agent" as const, name: r.name, depends_on: { kind: toolKind(r.tool), name: r.tool } })),
  ];
}
