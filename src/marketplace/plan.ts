/**
 * Planning a change (install, update, or a preview of either): everything is read and checked
 * here, nothing is written. A plan says exactly which declarations the change adds, replaces and
 * removes; building it refuses, in this order, an invalid bundle (502), a declaration this
 * deployment's policy refuses (422), a collision with a declaration the plugin does not own (409)
 * and, unless forced, removing a declaration something else still stands on (409). Applying a plan
 * is src/marketplace/apply.ts.
 */
import { z } from "zod";
import type { Env } from "../platform/env";
import { batch, d1, rowsOf } from "../platform/persistence/d1";
import type { Settings } from "../platform/settings/settings";
import { findVersion, isCompatible, latestCompatible } from "./compat";
import { DeclarationBundle, bundleKinds, type DeclarationKind } from "./contract";
import { findDependents } from "./dependents";
import { type RegistryAdvisory, type RegistryPlugin, type RegistryVersion, refOf } from "./index-format";
import { type InstalledPlugin, type OwnedDeclaration, ownedList } from "./installs";
import { type Declaration, KIND_TABLES, declarationsOf, isBuiltin, placeOf, policyProblems } from "./kinds";
import { type Collision, bundleInvalid, collision, declarationRefused, inUse, noCompatibleVersion, versionIncompatible, versionNotFound } from "./refusals";
import { compareVersions } from "./semver";

export interface Plan {
  operation: "install" | "update";
  ref: string;
  namespace: string;
  name: string;
  /** The target version as the registry spells it. */
  version: string;
  previous_version: string | null;
  /** Every declaration of the target version's bundle. */
  declarations: Declaration[];
  add: Declaration[];
  replace: Declaration[];
  remove: OwnedDeclaration[];
  /** Stored current bodies of the presets being replaced (JSON text), by name. */
  presetBodies: Map<string, string | null>;
  /** The registry's advisories that name the target version. */
  advisories: RegistryAdvisory[];
}

/** The version a change moves to: the one asked for (404, or 409 when this build cannot install it), else the latest compatible (409 when none). */
export function targetVersion(plugin: RegistryPlugin, requested: string | undefined, installed: string | null): RegistryVersion {
  const ref = refOf(plugin);
  if (requested !== undefined) {
    const v = findVersion(plugin, requested);
    if (!v) throw versionNotFound();
    if (!isCompatible(v)) throw versionIncompatible(ref, v.version);
    return v;
  }
  const latest = latestCompatible(plugin, installed);
  if (!latest) throw noCompatibleVersion(ref);
  return latest;
}

/** The version's bundle, parsed against the contract; 502 PLUGIN_BUNDLE_INVALID naming the version. */
export function parseBundle(plugin: RegistryPlugin, v: RegistryVersion): DeclarationBundle {
  const ref = refOf(plugin);
  const parsed = DeclarationBundle.safeParse(v.declarations);
  if (!parsed.success) {
    const problems = parsed.error.issues.slice(0, 10).map((i) => `${i.path.map(String).join(".") || "declarations"}: ${i.message}`);
    throw bundleInvalid(ref, v.version, problems);
  }
  const unlisted = bundleKinds(parsed.data).filter((k) => !plugin.kinds.includes(k));
  if (unlisted.length)
    throw bundleInvalid(
      ref,
      v.version,
      unlisted.map((k) => `declares kind ${k}, which the plugin's kinds do not list`),
    );
  return parsed.data;
}

/** What D1 holds under the names a plan touches. */
interface LocalState {
  tools: Set<string>;
  agents: Set<string>;
  /** Presets by name with their current body (JSON text). */
  presets: Map<string, string | null>;
  /** `kind:name` → owning ref. */
  owners: Map<string, string>;
}

const TitleRow = z.object({ title: z.string() });
const PresetBodyRow = z.object({ name: z.string(), body: z.string().nullable() });
const OwnerRow = z.object({ kind: z.string(), name: z.string(), ref: z.string() });

async function readLocalState(db: D1Database, toolNames: string[], agentNames: string[]): Promise<LocalState> {
  const tools = JSON.stringify(toolNames);
  const agents = JSON.stringify(agentNames);
  const q = d1(db);
  const toolsStmt = q`SELECT title FROM tool_declarations WHERE title IN (SELECT value FROM json_each(${tools}))`;
  const presetsStmt = q`SELECT p.name AS name, v.body AS body FROM presets p LEFT JOIN preset_versions v ON v.name = p.name AND v.version = p.current_version
         WHERE p.name IN (SELECT value FROM json_each(${tools}))`;
  const agentsStmt = q`SELECT title FROM agent_declarations WHERE title IN (SELECT value FROM json_each(${agents}))`;
  const ownersStmt = q`SELECT kind, name, ref FROM marketplace_owned
         WHERE (kind IN ('http_tool', 'preset') AND name IN (SELECT value FROM json_each(${tools}))) OR (kind = 'agent' AND name IN (SELECT value FROM json_each(${agents})))`;
  const [t, p, a, o] = await batch(db, [toolsStmt, presetsStmt, agentsStmt, ownersStmt]);
  return {
    tools: new Set(rowsOf(TitleRow, t.results, toolsStmt.text).map((r) => r.title)),
    presets: new Map(rowsOf(PresetBodyRow, p.results, presetsStmt.text).map((r) => [r.name, r.body])),
    agents: new Set(rowsOf(TitleRow, a.results, agentsStmt.text).map((r) => r.title)),
    owners: new Map(rowsOf(OwnerRow, o.results, ownersStmt.text).map((r) => [`${r.kind}:${r.name}`, r.ref])),
  };
}

const key = (kind: DeclarationKind, name: string) => `${kind}:${name}`;

/**
 * Plans moving `plugin` to `version` (an install when `installed` is null, else an update).
 * `force` lets an update remove declarations that something else still uses.
 */
export async function planChange(
  deps: { db: D1Database; settings: Settings; env: Env },
  plugin: RegistryPlugin,
  version: RegistryVersion,
  installed: InstalledPlugin | null,
  force: boolean,
): Promise<Plan> {
  const ref = refOf(plugin);
  const bundle = parseBundle(plugin, version);
  const declarations = declarationsOf(bundle);
  const owned = installed ? ownedList(installed) : [];
  const ownedKeys = new Set(owned.map((o) => key(o.kind, o.name)));
  const newKeys = new Set(declarations.map((d) => key(d.kind, d.name)));

  // Every name the plan reads: the bundle's, the presets' base tools, and what the plugin owns now.
  const toolish = new Set<string>();
  const agentish = new Set<string>();
  for (const d of declarations) (KIND_TABLES[d.kind].namespace === "tool" ? toolish : agentish).add(d.name);
  for (const p of bundle.presets) toolish.add(p.base_tool);
  for (const o of owned) (KIND_TABLES[o.kind].namespace === "tool" ? toolish : agentish).add(o.name);
  const local = await readLocalState(deps.db, [...toolish], [...agentish]);

  const remove = owned.filter((o) => !newKeys.has(key(o.kind, o.name)));
  const removedKeys = new Set(remove.map((o) => key(o.kind, o.name)));

  // 422: this deployment's policy, every declaration checked, every problem reported.
  const problems: string[] = [];
  for (const d of declarations) problems.push(...(await policyProblems(d, deps.settings, deps.env)));
  const bundleTools = new Set(bundle.http_tools.map((t) => t.title));
  const bundlePresets = new Set(bundle.presets.map((p) => p.name));
  for (const d of declarations) {
    if (d.kind !== "preset") continue;
    const base = d.body.base_tool;
    const existingTool = local.tools.has(base) && !removedKeys.has(key("http_tool", base));
    const existingPreset = local.presets.has(base) && !removedKeys.has(key("preset", base)) && !bundleTools.has(base);
    if (existingPreset || bundlePresets.has(base))
      problems.push(`${placeOf(d)}: base_tool names a preset; a preset stands on a built-in or declared HTTP tool`);
    else if (!isBuiltin("http_tool", base) && !bundleTools.has(base) && !existingTool)
      problems.push(`${placeOf(d)}: base_tool names no built-in or declared HTTP tool`);
  }
  if (problems.length) throw declarationRefused(ref, version.version, problems);

  // 409: a name taken by something the plugin does not own (built in, declared by hand, another plugin's).
  const collisions: Collision[] = [];
  const ownerOf = (kind: DeclarationKind, name: string) => local.owners.get(key(kind, name)) ?? "operator";
  for (const d of declarations) {
    if (isBuiltin(d.kind, d.name)) {
      collisions.push({ kind: d.kind, name: d.name, owner: "builtin" });
      continue;
    }
    const existing: DeclarationKind[] =
      KIND_TABLES[d.kind].namespace === "agent"
        ? local.agents.has(d.name)
          ? ["agent"]
          : []
        : [...(local.tools.has(d.name) ? ["http_tool" as const] : []), ...(local.presets.has(d.name) ? ["preset" as const] : [])];
    for (const kind of existing) if (!ownedKeys.has(key(kind, d.name))) collisions.push({ kind, name: d.name, owner: ownerOf(kind, d.name) });
  }
  if (collisions.length) throw collision(ref, collisions);

  // 409 unless forced: what the change removes must not be what something else stands on.
  if (remove.length && !force) {
    const dependents = await findDependents(deps.db, ref, remove, declarations);
    if (dependents.length) throw inUse(ref, dependents);
  }

  const exists = (d: Declaration) =>
    d.kind === "http_tool" ? local.tools.has(d.name) : d.kind === "agent" ? local.agents.has(d.name) : local.presets.has(d.name);
  const replace = declarations.filter((d) => ownedKeys.has(key(d.kind, d.name)) && exists(d));
  const add = declarations.filter((d) => !replace.includes(d));
  return {
    operation: installed ? "update" : "install",
    ref,
    namespace: plugin.namespace,
    name: plugin.name,
    version: version.version,
    previous_version: installed?.version ?? null,
    declarations,
    add,
    replace,
    remove,
    presetBodies: new Map(declarations.filter((d) => d.kind === "preset" && local.presets.has(d.name)).map((d) => [d.name, local.presets.get(d.name) ?? null])),
    advisories: plugin.advisories.filter((a) => a.affected_versions.some((v) => compareVersions(v, version.version) === 0)),
  };
}
