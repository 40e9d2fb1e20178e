/**
 * Which published version a plugin moves to (pure; docs/marketplace.md "Compatibility").
 *
 * A version is compatible when it lists this build's contract (bridge-declarations 1). The
 * "latest compatible" version is the highest compatible release; prereleases (`1.2.0-rc.1`) are
 * installed only when asked for by version, except that an installed prerelease still counts as
 * a candidate for itself, so upgrade-all never calls it incompatible. upgrade-all never moves a
 * plugin down: a registry that withdrew the installed version leaves it where it is.
 */
import { CONTRACT_LABEL, supportsContract } from "./contract";
import type { RegistryPlugin, RegistryVersion } from "./index-format";
import { compareVersions, isPrerelease } from "./semver";

export function isCompatible(v: Pick<RegistryVersion, "contracts">): boolean {
  return supportsContract(v.contracts);
}

function highest(versions: RegistryVersion[]): RegistryVersion | null {
  let best: RegistryVersion | null = null;
  for (const v of versions) if (!best || compareVersions(v.version, best.version) > 0) best = v;
  return best;
}

/**
 * The highest compatible release of `plugin`, or null when none. `installed` (a version string)
 * also counts when it is published and compatible, even as a prerelease.
 */
export function latestCompatible(plugin: RegistryPlugin, installed: string | null = null): RegistryVersion | null {
  return highest(
    plugin.versions.filter((v) => isCompatible(v) && (!isPrerelease(v.version) || (installed !== null && compareVersions(v.version, installed) === 0))),
  );
}

/** The highest release of `plugin` that this build cannot install and that is newer than `than`. */
export function newestIncompatibleAbove(plugin: RegistryPlugin, than: string | null): RegistryVersion | null {
  return highest(plugin.versions.filter((v) => !isCompatible(v) && !isPrerelease(v.version) && (than === null || compareVersions(v.version, than) > 0)));
}

/** The published version equal in precedence to `version`, or undefined. */
export function findVersion(plugin: RegistryPlugin, version: string): RegistryVersion | undefined {
  return plugin.versions.find((v) => compareVersions(v.version, version) === 0);
}

/** What upgrade-all does with one installed plugin (platform-facts A6 outcome vocabulary). */
export type UpgradeDecision =
  | { outcome: "upgrade"; from: string; to: string }
  | { outcome: "up-to-date"; detail: string }
  | { outcome: "no-compatible-version"; detail: string }
  | { outcome: "failed"; detail: string };

/** ` (<newer> exists but does not support bridge-declarations 1)`, or "". */
function suffix(newer: RegistryVersion | null): string {
  return newer ? ` (${newer.version} exists but does not support ${CONTRACT_LABEL})` : "";
}

/** Decides one ref of upgrade-all from its installed version and its registry entry (absent: unpublished). */
export function decideUpgrade(installed: string, plugin: RegistryPlugin | undefined): UpgradeDecision {
  if (!plugin) return { outcome: "failed", detail: "the plugin is no longer published in the registry" };
  const latest = latestCompatible(plugin, installed);
  if (!latest) {
    return { outcome: "no-compatible-version", detail: `no published version supports ${CONTRACT_LABEL}${suffix(newestIncompatibleAbove(plugin, installed))}` };
  }
  if (compareVersions(latest.version, installed) > 0) return { outcome: "upgrade", from: installed, to: latest.version };
  const newer = newestIncompatibleAbove(plugin, installed);
  return { outcome: "up-to-date", detail: `${installed} is the latest compatible version${suffix(newer)}` };
}
