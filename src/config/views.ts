/**
 * What the read doors show of the settings: every known setting with where its value comes from
 * (`overlay`, `env` or `default`), and its value unless it is secret (then only whether it is
 * set). Pure over the Worker's env and the stored overlay rows.
 */
import { z } from "zod";
import { SETTINGS, type SettingDefault, settingDefinition } from "../platform/settings/registry";
import type { OverlayRow } from "./overlay-store";
import { must } from "../platform/must";

export const SettingView = z
  .object({
    name: z.string(),
    source: z.enum(["overlay", "env", "default"]),
    secret: z.boolean(),
    set: z.boolean(),
    /** The value in force as env text; absent for secrets; null when unset with no default. */
    value: z.string().nullable().optional(),
    /** May the overlay set it (false: env only). */
    overlay: z.boolean(),
  })
  .strict();
export type SettingView = z.infer<typeof SettingView>;

function envText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === "string" ? v : JSON.stringify(v);
}

function defaultText(d: SettingDefault): string | null {
  if (d === null) return null;
  return typeof d === "string" ? d : JSON.stringify(d);
}

/** Every concrete setting name: the registry's, and the family members present in the env or the overlay. */
export function knownNames(base: Record<string, unknown>, rows: readonly OverlayRow[]): string[] {
  const names = new Set(SETTINGS.filter((s) => !s.family).map((s) => s.name));
  for (const n of [...Object.keys(base), ...rows.map((r) => r.name)]) {
    const d = settingDefinition(n);
    if (d?.family) names.add(n);
  }
  return [...names].sort();
}

export function settingViews(base: Record<string, unknown>, rows: readonly OverlayRow[]): SettingView[] {
  const byName = new Map(rows.map((r) => [r.name, r]));
  return knownNames(base, rows).map((name) => {
    const def = must(settingDefinition(name), `the definition of the known setting ${name}`);
    const row = byName.get(name);
    // A row for a setting the overlay may not set (env-only) is not in force: the env is.
    const overlayRow = row && def.overlay ? row : undefined;
    const env = envText(base[name]);
    const source = overlayRow ? "overlay" : env !== undefined ? "env" : "default";
    const secret = def.secret || overlayRow?.secret === 1;
    const view: SettingView = { name, source, secret, set: overlayRow !== undefined || (env !== undefined && env.trim() !== ""), overlay: def.overlay };
    if (!secret) view.value = overlayRow ? overlayRow.value : env !== undefined ? env : defaultText(def.default);
    return view;
  });
}
