/**
 * Combos (platform facts B4): a tool's extensions are a list of combos, each an ordered
 * list of elements, an element being an extension name (its config defaults) or
 * `{name, config}`. Every element is checked against the catalog and its extension's own config
 * schema when it is written, so a stored combo always runs. Pure.
 *
 * Order (docs/extensions.md): the combos' elements form one chain, combo by combo; each element
 * wraps everything before it, so the first element is closest to the tool and a result passes
 * through the elements in list order.
 */
import { z } from "zod";
import { boundedJsonObject } from "../platform/http/bounded-json";
import { canonicalJson } from "./canonical";
import { EXTENSIONS } from "./catalog";
import type { ExtensionDef } from "./model";

export const MAX_CONFIG_BYTES = 16 * 1024;
export const MAX_COMBO_ELEMENTS = 8;
export const MAX_COMBOS = 16;

const extensionName = z.string().min(1).max(64);

/** One element as written: a catalog name, or `{name, config}`. */
export const ExtensionElement = z.union([extensionName, z.object({ name: extensionName, config: boundedJsonObject(MAX_CONFIG_BYTES) }).strict()]);
export type ExtensionElement = z.infer<typeof ExtensionElement>;

/** An element resolved against the catalog: its extension and its parsed config (defaults filled). */
export interface ResolvedElement {
  def: ExtensionDef;
  config: unknown;
}

type Resolution = { ok: true; element: ResolvedElement } | { ok: false; path: PropertyKey[]; message: string };

/** Resolves one element; a failure names where and what, never the value. Pure. */
export function resolveElement(el: ExtensionElement): Resolution {
  const name = typeof el === "string" ? el : el.name;
  const def = EXTENSIONS.get(name);
  if (!def) return { ok: false, path: typeof el === "string" ? [] : ["name"], message: "is not an extension of the catalog (GET /api/extensions)" };
  const parsed = def.config.safeParse(typeof el === "string" ? {} : el.config);
  if (parsed.success) return { ok: true, element: { def, config: parsed.data } };
  const issue = parsed.error.issues[0];
  if (typeof el === "string")
    return { ok: false, path: [], message: `${def.name} needs a config ({name, config}): ${issue.path.map(String).join(".") || "config"}: ${issue.message}` };
  return { ok: false, path: ["config", ...issue.path], message: issue.message };
}

/** One combo: 1–8 elements, each resolving against the catalog. */
export const Combo = z
  .array(ExtensionElement)
  .min(1)
  .max(MAX_COMBO_ELEMENTS)
  .superRefine((combo, ctx) => {
    for (const [i, el] of combo.entries()) {
      const r = resolveElement(el);
      if (!r.ok) ctx.addIssue({ code: "custom", path: [i, ...r.path], message: r.message });
    }
  });
export type Combo = z.infer<typeof Combo>;

/** A tool's (or preset version's) extensions: at most 16 combos. */
export const Combos = z.array(Combo).max(MAX_COMBOS);
export type Combos = z.infer<typeof Combos>;

function elementName(el: ExtensionElement): string {
  return typeof el === "string" ? el : el.name;
}

/** The chain the combos make, in order (first element closest to the tool). Throws for an element the catalog refuses. */
export function chainOf(combos: readonly Combo[]): ResolvedElement[] {
  return combos.flat().map((el) => {
    const r = resolveElement(el);
    if (!r.ok) throw new Error(`extension element ${elementName(el)} no longer resolves`);
    return r.element;
  });
}

/** What tells two combos apart: names and parsed configs, so `"retry"` equals `{name: "retry", config: {}}`. Pure. */
export function comboKey(combo: readonly ExtensionElement[]): string {
  return JSON.stringify(
    combo.map((el) => {
      const r = resolveElement(el);
      return canonicalJson([elementName(el), r.ok ? r.element.config : typeof el === "string" ? {} : el.config]);
    }),
  );
}

/** A combo as messages name it: its extension names only (catalog names, never config values). Pure. */
export function comboLabel(combo: readonly ExtensionElement[]): string {
  return `[${combo.map(elementName).join(", ")}]`;
}

export type ComboEdit = { ok: true; combos: Combo[] } | { ok: false; status: 400 | 404; message: string };

/**
 * Applies `remove` then `add` to `current` (POST /api/tools/{name}/extensions/combos). Removing a
 * combo that is not there is 404, adding one already there (or twice) is 400, each naming the
 * combo; more than MAX_COMBOS after the edit is 400. Pure.
 */
export function editCombos(current: readonly Combo[], add: readonly Combo[], remove: readonly Combo[]): ComboEdit {
  let combos = [...current];
  for (const c of remove) {
    const key = comboKey(c);
    const at = combos.findIndex((x) => comboKey(x) === key);
    if (at < 0) return { ok: false, status: 404, message: `combo ${comboLabel(c)} is not attached to the tool` };
    combos = [...combos.slice(0, at), ...combos.slice(at + 1)];
  }
  for (const c of add) {
    const key = comboKey(c);
    if (combos.some((x) => comboKey(x) === key)) return { ok: false, status: 400, message: `combo ${comboLabel(c)} is already attached to the tool` };
    combos.push(c);
  }
  if (combos.length > MAX_COMBOS) return { ok: false, status: 400, message: `a tool takes at most ${MAX_COMBOS} combos` };
  return { ok: true, combos };
}
