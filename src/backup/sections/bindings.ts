/**
 * State bindings in an import (presets and target configs carry them). Before anything is written,
 * the import can only check what does not need the states to be declared already: the states
 * store is configured (501 like the doors), and every state and template a binding names is in
 * the deployment or in this import. The doors' full check (`checkBindingForSave`: programs resolve
 * and compile; templates attached on use) runs when the section applies, after the states section,
 * and before that section's batch: a refusal there writes nothing of the section.
 */
import { notConfigured } from "../../platform/http/errors";
import { checkBindingForSave } from "../../states/binding-save";
import type { StateBinding } from "../../shared/state-binding";
import { deployedStates, deployedTemplates } from "../deployment";
import type { SectionName } from "../rows";
import { type ImportContext, inRow, rowFault } from "../section";

export async function checkBindingNames(ctx: ImportContext, section: SectionName, i: number, field: string, binding: StateBinding | null): Promise<void> {
  if (!binding) return;
  if (!ctx.settings.states.storeUrl) throw notConfigured("states", "a state_binding needs the states store (set STATES_STORE_URL)");
  const states = new Set([...(await deployedStates(ctx)), ...(ctx.rows.states ?? []).map((s) => s.name)]);
  const templates = new Set([...(await deployedTemplates(ctx)), ...(ctx.rows["state-templates"] ?? []).map((t) => t.name)]);
  for (const [j, attach] of binding.states.entries()) {
    if (!states.has(attach.state))
      throw rowFault(section, i, `${field}.states.${j}.state`, "names a state that is neither declared in the deployment nor in this import");
    const k = attach.templates.findIndex((t) => !templates.has(t));
    if (k >= 0)
      throw rowFault(section, i, `${field}.states.${j}.templates.${k}`, "names a state template that is neither in the deployment nor in this import");
  }
}

/** The doors' own binding check (and attach on use), at apply time; a refusal names the row. */
export async function checkBindingsAtApply(
  ctx: ImportContext,
  section: SectionName,
  bindings: Array<{ index: number; binding: StateBinding | null }>,
): Promise<void> {
  for (const { index, binding } of bindings) {
    if (binding) await inRow(section, index, () => checkBindingForSave(ctx.env, binding, ctx.nowMs));
  }
}
