/**
 * The marketplace's operations, composed from the parts (docs/marketplace.md): preview, install,
 * update and uninstall of one plugin, and upgrade-all. The doors take the fleet lock around the
 * writes (src/marketplace/fleet-lock.ts); these functions assume it is held. Preview writes nothing
 * and takes no lock.
 */
import type { Env } from "../platform/env";
import { HttpError } from "../platform/http/errors";
import type { Settings } from "../platform/settings/settings";
import { decideUpgrade } from "./compat";
import { GuardTripped, applyPlan, applyUninstall } from "./apply";
import { findDependents } from "./dependents";
import type { KeepAlive } from "./fleet-lock";
import { type RegistryIndex, findPlugin } from "./index-format";
import { getInstalled, listInstalled, ownedList } from "./installs";
import { type Plan, planChange, targetVersion } from "./plan";
import { type ChangeResult, type Preview, type UpgradeEntry, previewOf } from "./results";
import { alreadyInstalled, inUse, notInstalled, pluginNotFound } from "./refusals";

export interface MarketplaceDeps {
  db: D1Database;
  settings: Settings;
  env: Env;
}

export interface ChangeRequest {
  ref: string;
  version?: string;
  force?: boolean;
}

/**
 * Plans a change. `mode` install refuses an installed ref (409), update an absent one (404);
 * preview plans whichever applies.
 */
async function plan(deps: MarketplaceDeps, index: RegistryIndex, req: ChangeRequest, mode: "install" | "update" | "preview"): Promise<Plan> {
  const plugin = findPlugin(index, req.ref);
  if (!plugin) throw pluginNotFound();
  const installed = await getInstalled(deps.db, req.ref);
  if (mode === "install" && installed) throw alreadyInstalled(installed.ref, installed.version);
  if (mode === "update" && !installed) throw notInstalled();
  const version = targetVersion(plugin, req.version, installed?.version ?? null);
  return planChange(deps, plugin, version, installed, req.force === true);
}

/** What install (or, for an installed ref, update) would do; nothing is written. */
export async function previewChange(deps: MarketplaceDeps, index: RegistryIndex, req: ChangeRequest): Promise<Preview> {
  const p = await plan(deps, index, req, "preview");
  return previewOf(p, p.previous_version);
}

/**
 * Plans and applies in one batch. When the batch's guard finds the store changed under the plan,
 * it plans once more, which refuses with the colliding names (or, if the store changed back,
 * applies that plan).
 */
async function change(deps: MarketplaceDeps, index: RegistryIndex, req: ChangeRequest, mode: "install" | "update"): Promise<ChangeResult> {
  for (let attempt = 0; ; attempt += 1) {
    const p = await plan(deps, index, req, mode);
    try {
      await applyPlan(deps.db, p, new Date().toISOString());
    } catch (err) {
      if (err instanceof GuardTripped && attempt === 0) continue;
      if (err instanceof GuardTripped)
        throw new HttpError(409, `${p.ref}: the declarations changed while it was being applied; retry`, "DECLARATION_COLLISION", {
          ref: p.ref,
          collisions: [],
        });
      throw err;
    }
    const installed = await getInstalled(deps.db, p.ref);
    if (!installed) throw new Error("marketplace: the install row is missing right after its batch");
    return { ...previewOf(p, p.previous_version), installed };
  }
}

export function installPlugin(deps: MarketplaceDeps, index: RegistryIndex, req: ChangeRequest): Promise<ChangeResult> {
  return change(deps, index, req, "install");
}

export function updatePlugin(deps: MarketplaceDeps, index: RegistryIndex, req: ChangeRequest): Promise<ChangeResult> {
  return change(deps, index, req, "update");
}

/** Removes what the plugin owns; refused (409 PLUGIN_IN_USE) while something else stands on it, unless forced. */
export async function uninstallPlugin(deps: MarketplaceDeps, req: { ref: string; force?: boolean }) {
  const installed = await getInstalled(deps.db, req.ref);
  if (!installed) throw notInstalled();
  const owned = ownedList(installed);
  if (!req.force) {
    const dependents = await findDependents(deps.db, installed.ref, owned, []);
    if (dependents.length) throw inUse(installed.ref, dependents);
  }
  await applyUninstall(deps.db, installed.ref, owned);
  return { ref: installed.ref, version: installed.version, removed: owned };
}

/** A failure's message for a result entry: an HttpError's own; anything else is logged and named generically. */
function failureDetail(err: unknown, ref: string): string {
  if (err instanceof HttpError) return err.message;
  console.error(`marketplace: upgrading ${ref} failed unexpectedly`, err);
  return "the update failed unexpectedly (see the service logs)";
}

/**
 * upgrade-all (spec §4.10, platform-facts A6): every installed plugin onto its latest compatible
 * version through the ordinary update flow, one entry per ref, by ref. A ref's failure is its
 * entry and never stops the others; an index that cannot be read fails every entry. `keepAlive`
 * renews the fleet lock between refs; a lost lease fails the refs not yet done.
 */
export async function upgradeAll(deps: MarketplaceDeps, readIndex: () => Promise<RegistryIndex>, keepAlive: KeepAlive): Promise<UpgradeEntry[]> {
  const installed = await listInstalled(deps.db);
  if (!installed.length) return [];
  let index: RegistryIndex;
  try {
    index = await readIndex();
  } catch (err) {
    const detail = failureDetail(err, "every plugin");
    return installed.map((p) => ({ ref: p.ref, outcome: "failed" as const, detail }));
  }
  const results: UpgradeEntry[] = [];
  for (const p of installed) {
    if (!(await keepAlive().catch(() => false))) {
      results.push({ ref: p.ref, outcome: "failed", detail: "the fleet marketplace lock's lease was lost before this plugin's turn" });
      continue;
    }
    const decision = decideUpgrade(p.version, findPlugin(index, p.ref));
    if (decision.outcome === "no-compatible-version") {
      console.error(JSON.stringify({ event: "marketplace_no_compatible_version", ref: p.ref, installed_version: p.version }));
    }
    if (decision.outcome !== "upgrade") {
      results.push({ ref: p.ref, outcome: decision.outcome, detail: decision.detail });
      continue;
    }
    try {
      await updatePlugin(deps, index, { ref: p.ref, version: decision.to });
      results.push({ ref: p.ref, outcome: "upgraded", detail: `${decision.from} -> ${decision.to}` });
    } catch (err) {
      results.push({ ref: p.ref, outcome: "failed", detail: failureDetail(err, p.ref) });
    }
  }
  return results;
}
