/**
 * What the marketplace's read doors answer (docs/marketplace.md "Doors"): one zod schema per shape
 * (the OpenAPI document shows them) and pure builders over the registry index and the installed
 * versions. Nothing here shows a declaration's content; previews do (src/marketplace/results.ts).
 */
import { z } from "zod";
import { isCompatible, latestCompatible } from "./compat";
import {
  CONTRACT_LABEL,
  DECLARATION_CONTRACT,
  DECLARATION_CONTRACT_VERSION,
  DECLARATION_KINDS,
  DeclarationBundle,
  DeclarationNames,
  KNOWN_KINDS,
  bundleNames,
} from "./contract";
import { type RegistryAdvisory, type RegistryIndex, type RegistryPlugin, refOf } from "./index-format";
import { compareVersions, isPrerelease } from "./semver";

export const PluginSummary = z.object({
  ref: z.string(),
  namespace: z.string(),
  name: z.string(),
  description: z.string(),
  categories: z.array(z.string()),
  kinds: z.array(z.string()),
  /** The highest release this build can install, or null. */
  latest_version: z.string().nullable(),
  /** The highest release published, compatible or not. */
  newest_version: z.string(),
  /** Whether any release is installable by this build. */
  compatible: z.boolean(),
  installed_version: z.string().nullable(),
  /** How many advisories the registry lists for the plugin (the detail door lists them). */
  advisory_count: z.number().int(),
});
export type PluginSummary = z.infer<typeof PluginSummary>;

export const AdvisoryView = z.object({
  ref: z.string(),
  id: z.string(),
  severity: z.enum(["low", "moderate", "high", "critical"]),
  summary: z.string(),
  affected_versions: z.array(z.string()),
  fixed_in: z.string().nullable(),
  url: z.string().nullable(),
  installed_version: z.string().nullable(),
  /** The installed version is one of `affected_versions`. */
  affects_installed: z.boolean(),
});
export type AdvisoryView = z.infer<typeof AdvisoryView>;

export const VersionView = z.object({
  version: z.string(),
  prerelease: z.boolean(),
  contracts: z.record(z.string(), z.array(z.number().int())),
  /** `ok`: installable here; `incompatible`: written for another contract; `invalid`: lists this build's contract but its bundle breaks it. */
  bundle: z.enum(["ok", "incompatible", "invalid"]),
  /** The declarations it holds, by kind; null unless `bundle` is `ok`. */
  declarations: DeclarationNames.nullable(),
  /** Ids of the advisories that name this version. */
  advisories: z.array(z.string()),
});
export type VersionView = z.infer<typeof VersionView>;

export const PluginDetail = PluginSummary.extend({
  /** Newest first. */
  versions: z.array(VersionView),
  advisories: z.array(AdvisoryView),
});
export type PluginDetail = z.infer<typeof PluginDetail>;

export const CategoryView = z.object({ category: z.string(), plugins: z.number().int() });
export const KindView = z.object({
  kind: z.string(),
  /** This build installs the kind. */
  supported: z.boolean(),
  description: z.string().nullable(),
  plugins: z.number().int(),
});
export const KindsView = z.object({
  contract: z.object({ name: z.string(), version: z.number().int(), label: z.string() }),
  items: z.array(KindView),
  total: z.number().int(),
});

function newest(p: RegistryPlugin): string {
  return p.versions.reduce((best, v) => (compareVersions(v.version, best) > 0 ? v.version : best), p.versions[0].version);
}

export function pluginSummary(p: RegistryPlugin, installed: ReadonlyMap<string, string>): PluginSummary {
  const ref = refOf(p);
  const installedVersion = installed.get(ref) ?? null;
  const latest = latestCompatible(p, installedVersion);
  return {
    ref,
    namespace: p.namespace,
    name: p.name,
    description: p.description,
    categories: p.categories,
    kinds: p.kinds,
    latest_version: latest?.version ?? null,
    newest_version: newest(p),
    compatible: p.versions.some((v) => isCompatible(v) && !isPrerelease(v.version)),
    installed_version: installedVersion,
    advisory_count: p.advisories.length,
  };
}

function affects(a: RegistryAdvisory, version: string | null): boolean {
  return version !== null && a.affected_versions.some((v) => compareVersions(v, version) === 0);
}

export function advisoryView(p: RegistryPlugin, a: RegistryAdvisory, installed: ReadonlyMap<string, string>): AdvisoryView {
  const installedVersion = installed.get(refOf(p)) ?? null;
  return { ref: refOf(p), ...a, installed_version: installedVersion, affects_installed: affects(a, installedVersion) };
}

export function pluginDetail(p: RegistryPlugin, installed: ReadonlyMap<string, string>): PluginDetail {
  const versions = [...p.versions]
    .sort((a, b) => compareVersions(b.version, a.version))
    .map((v): VersionView => {
      let bundle: VersionView["bundle"] = "incompatible";
      let declarations: DeclarationNames | null = null;
      if (isCompatible(v)) {
        const parsed = DeclarationBundle.safeParse(v.declarations);
        bundle = parsed.success ? "ok" : "invalid";
        declarations = parsed.success ? bundleNames(parsed.data) : null;
      }
      return {
        version: v.version,
        prerelease: isPrerelease(v.version),
        contracts: v.contracts,
        bundle,
        declarations,
        advisories: p.advisories.filter((a) => affects(a, v.version)).map((a) => a.id),
      };
    });
  return { ...pluginSummary(p, installed), versions, advisories: p.advisories.map((a) => advisoryView(p, a, installed)) };
}

export interface SearchFilters {
  q?: string;
  category?: string;
  kind?: string;
  compatible?: boolean;
  installed?: boolean;
}

/** The plugins matching every given filter, by ref. `q` is a case-insensitive substring of the ref or description. */
export function searchPlugins(index: RegistryIndex, installed: ReadonlyMap<string, string>, f: SearchFilters): PluginSummary[] {
  const q = f.q?.toLowerCase();
  return index.plugins
    .map((p) => pluginSummary(p, installed))
    .filter(
      (s) =>
        (!q || s.ref.includes(q) || s.description.toLowerCase().includes(q)) &&
        (!f.category || s.categories.includes(f.category)) &&
        (!f.kind || s.kinds.includes(f.kind)) &&
        (f.compatible === undefined || s.compatible === f.compatible) &&
        (f.installed === undefined || (s.installed_version !== null) === f.installed),
    )
    .sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
}

export function categories(index: RegistryIndex): Array<z.infer<typeof CategoryView>> {
  const counts = new Map<string, number>();
  for (const p of index.plugins) for (const c of new Set(p.categories)) counts.set(c, (counts.get(c) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([category, plugins]) => ({ category, plugins }));
}

/** This build's kinds (always listed) and every other kind the registry's plugins advertise. */
export function kinds(index: RegistryIndex): z.infer<typeof KindsView> {
  const counts = new Map<string, number>(DECLARATION_KINDS.map((k) => [k.kind, 0]));
  for (const p of index.plugins) for (const k of new Set(p.kinds)) counts.set(k, (counts.get(k) ?? 0) + 1);
  const items = [...counts]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([kind, plugins]) => ({
      kind,
      supported: KNOWN_KINDS.has(kind),
      description: DECLARATION_KINDS.find((k) => k.kind === kind)?.description ?? null,
      plugins,
    }));
  return { contract: { name: DECLARATION_CONTRACT, version: DECLARATION_CONTRACT_VERSION, label: CONTRACT_LABEL }, items, total: items.length };
}
