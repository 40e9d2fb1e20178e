/**
 * The `presets` section (docs/backup.md): each preset with every version (body, tags), its
 * current and latest version pointers. An import replaces a preset's versions with the
 * document's, so its history is the one the pointers refer to. Every version's body meets the
 * create door's schema; the current version's base tool must exist (a built-in, or a declared
 * HTTP tool in the deployment or this import, never a preset), as at the door.
 */
import { z } from "zod";
import type { StateBinding } from "../../shared/state-binding";
import { type PresetBody, initialBody, presetBodySchema, presetCreateSchema, tagsSchema } from "../../targets/presets/model";
import { insertVersionStatement, presetRowStatement } from "../../targets/presets/store";
import { targetNameSchema } from "../../shared/target-names";
import { isBuiltinTool } from "../../targets/tools/builtins";
import { batch, d1, rowsOf } from "../../platform/persistence/d1";
import { parseStored } from "../../platform/persistence/stored-json";
import { deployedPresets, deployedTools } from "../deployment";
import type { PresetBackupRow } from "../rows";
import { defineSection, parseAtRow, refuseDuplicates, rowFault, runBatch } from "../section";
import { checkBindingNames, checkBindingsAtApply } from "./bindings";

const PresetRowDb = z.object({ name: z.string(), current_version: z.number(), latest_version: z.number(), created_at: z.string(), updated_at: z.string() });
const VersionRowDb = z.object({ name: z.string(), version: z.number(), body: z.string(), tags: z.string(), created_at: z.string() });

interface PresetPlanRow {
  index: number;
  row: PresetBackupRow;
  bodies: PresetBody[];
  current: StateBinding | null;
}

const Tags = z.array(z.string());

export const presetsSection = defineSection({
  name: "presets",
  secret: false,
  description: "Presets with every version (body and tags) and their current and latest version pointers.",
  async exportRows(ctx) {
    const presetsStmt = d1(ctx.db)`SELECT name, current_version, latest_version, created_at, updated_at FROM presets ORDER BY name`;
    const versionsStmt = d1(ctx.db)`SELECT name, version, body, tags, created_at FROM preset_versions ORDER BY name, version`;
    const [presets, versions] = await batch(ctx.db, [presetsStmt, versionsStmt]);
    const byName = new Map<string, PresetBackupRow["versions"]>();
    for (const v of rowsOf(VersionRowDb, versions.results, versionsStmt.text)) {
      const body = parseStored(presetBodySchema, v.body, "preset_versions row");
      byName.set(v.name, [
        ...(byName.get(v.name) ?? []),
        {
          version: v.version,
          body: body as PresetBackupRow["versions"][number]["body"],
          tags: parseStored(Tags, v.tags, "preset_versions tags"),
          created_at: v.created_at,
        },
      ]);
    }
    return rowsOf(PresetRowDb, presets.results, presetsStmt.text).map((p) => ({ ...p, versions: byName.get(p.name) ?? [] }));
  },
  async validate(rows, ctx) {
    refuseDuplicates("presets", rows, (r) => r.name, "name");
    const tools = new Set([...(await deployedTools(ctx)), ...(ctx.rows.tools ?? []).map((t) => t.declaration.title)]);
    const presets = new Set([...(await deployedPresets(ctx)), ...rows.map((r) => r.name)]);
    const plan: PresetPlanRow[] = [];
    for (const [i, row] of rows.entries()) {
      parseAtRow("presets", i, "name", targetNameSchema, row.name);
      if (isBuiltinTool(row.name)) throw rowFault("presets", i, "name", "is the name of a built-in tool");
      if (tools.has(row.name)) throw rowFault("presets", i, "name", "is the name of a declared tool (in the deployment or this import)");
      if (row.versions.length === 0) throw rowFault("presets", i, "versions", "must hold at least one version");
      const numbers = new Set<number>();
      const bodies: PresetBody[] = [];
      for (const [j, v] of row.versions.entries()) {
        if (v.version < 1) throw rowFault("presets", i, `versions.${j}.version`, "must be at least 1");
        if (numbers.has(v.version)) throw rowFault("presets", i, `versions.${j}.version`, "repeats an earlier version");
        numbers.add(v.version);
        if (Object.hasOwn(v.body, "name")) throw rowFault("presets", i, `versions.${j}.body.name`, "is not a field of a version's body");
        // The create door's schema over the body (its name aside): bounded kwargs, JSON Schemas, binding shape.
        bodies.push(initialBody(parseAtRow("presets", i, `versions.${j}.body`, presetCreateSchema, { name: row.name, ...v.body })));
        parseAtRow("presets", i, `versions.${j}.tags`, tagsSchema, v.tags);
      }
      if (!numbers.has(row.current_version)) throw rowFault("presets", i, "current_version", "must be one of the versions");
      if (row.latest_version !== Math.max(...numbers)) throw rowFault("presets", i, "latest_version", "must be the highest version");
      const current = bodies[row.versions.findIndex((v) => v.version === row.current_version)];
      const base = current.base_tool;
      if (presets.has(base)) throw rowFault("presets", i, "base_tool", "must name a built-in or declared HTTP tool, not a preset");
      if (!isBuiltinTool(base) && !tools.has(base)) throw rowFault("presets", i, "base_tool", "names no tool of the deployment or this import");
      await checkBindingNames(ctx, "presets", i, "state_binding", current.state_binding);
      plan.push({ index: i, row, bodies, current: current.state_binding });
    }
    return plan;
  },
  async apply(plan, ctx) {
    await checkBindingsAtApply(
      ctx,
      "presets",
      plan.map((p) => ({ index: p.index, binding: p.current })),
    );
    const db = ctx.db;
    await runBatch(
      db,
      plan.flatMap(({ row, bodies }) => [
        // An import is an admin's write: the importing admin is who made each active version active.
        presetRowStatement(db, { ...row, stored_by: ctx.principal.key.user_id }, "restore"),
        d1(db)`DELETE FROM preset_versions WHERE name = ${row.name}`,
        ...row.versions.map((v, j) => insertVersionStatement(db, row.name, { ...v, body: bodies[j] }, { onlyAfterInsert: false })),
      ]),
    );
    return { applied: plan.length };
  },
});
