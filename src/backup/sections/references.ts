/**
 * Cross-references the sections that bind an execution key and run a tool share (`routes`,
 * `hooks`): does the target exist after this import, may a key this import writes be bound (the
 * pass-role rules of src/access-control/pass-role.ts), and does a stored program compile. Each refusal names
 * the section, the row and the field, never the value.
 */
import { z } from "zod";
import { conditionNeedsRequest } from "../../access-control/condition";
import { getRole } from "../../access-control/roles";
import type { TargetKind } from "../../shared/kinds";
import { JqError, jqCompile } from "../../platform/jq/engine";
import { d1, first } from "../../platform/persistence/d1";
import { BUILTIN_AGENT_NAMES } from "../../targets/agents/declarations";
import { isBuiltinTool } from "../../targets/tools/builtins";
import { deployedAgents, deployedPresets, deployedTools } from "../deployment";
import type { SectionName } from "../rows";
import { type ImportContext, rowFault } from "../section";

/** Is (kind, name) a target after this import: a built-in, in the deployment, or in this import? */
export async function targetWillExist(ctx: ImportContext, kind: TargetKind, name: string): Promise<boolean> {
  if (kind === "tool") {
    if (isBuiltinTool(name) || (await deployedTools(ctx)).has(name) || (await deployedPresets(ctx)).has(name)) return true;
    return (ctx.rows.tools ?? []).some((t) => t.declaration.title === name) || (ctx.rows.presets ?? []).some((p) => p.name === name);
  }
  if (BUILTIN_AGENT_NAMES.has(name) || (await deployedAgents(ctx)).has(name)) return true;
  return (ctx.rows.agents ?? []).some((a) => a.declaration.title === name);
}

const OwnerPolicyRow = z.object({ role: z.string().nullable(), condition: z.string().nullable() });

/** The condition of role `name` after this import (null: none, or no such role). */
async function roleConditionAfter(ctx: ImportContext, name: string | null): Promise<string | null> {
  if (name === null) return null;
  const imported = (ctx.rows.roles ?? []).find((r) => r.name === name);
  if (imported) return imported.condition;
  return (await getRole(ctx.db, name))?.condition ?? null;
}

/**
 * The pass-role rules (src/access-control/pass-role.ts) for a key this import writes: its condition, its
 * role's, its owner's and its owner's role's must be evaluable without a request (`runs`: what runs as the key,
 * "a turn", "a fire"). A key the import does not write is checked by `bindExecutionKey` itself,
 * which reads it: false then.
 */
export async function checkImportedExecutionKey(ctx: ImportContext, section: SectionName, i: number, userId: string, runs: string): Promise<boolean> {
  const key = (ctx.rows.keys ?? []).find((k) => k.user_id === userId && k.user_id !== ctx.principal.key.user_id);
  if (!key) return false;
  const owner = key.owner_user_id ? ((ctx.rows.keys ?? []).find((k) => k.user_id === key.owner_user_id) ?? null) : null;
  const deployedOwner =
    !owner && key.owner_user_id ? await first(OwnerPolicyRow, d1(ctx.db)`SELECT role, condition FROM api_keys WHERE user_id = ${key.owner_user_id}`) : null;
  const ownerRole = owner ? owner.role : (deployedOwner?.role ?? null);
  const ownerCondition = owner ? owner.condition : (deployedOwner?.condition ?? null);
  if (key.condition && conditionNeedsRequest(key.condition))
    throw rowFault(section, i, "execution_key", `its condition reads .request, which ${runs} does not have`);
  if (ownerCondition && conditionNeedsRequest(ownerCondition))
    throw rowFault(section, i, "execution_key", `its owner's condition reads .request, which ${runs} does not have`);
  for (const role of [key.role, ownerRole]) {
    const condition = await roleConditionAfter(ctx, role);
    if (condition && conditionNeedsRequest(condition))
      throw rowFault(section, i, "execution_key", `a role's condition reads .request, which ${runs} does not have`);
  }
  return true;
}

/** A stored jq program must compile (what the runs execute): 400 naming the field otherwise. */
export async function compiles(section: SectionName, i: number, field: string, program: string): Promise<void> {
  try {
    await jqCompile(program);
  } catch (err) {
    if (err instanceof JqError) throw rowFault(section, i, field, err.kind === "budget" ? err.message : "jq program does not compile");
    throw err;
  }
}
