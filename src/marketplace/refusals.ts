/**
 * The marketplace's refusals, one constructor each, so every door and upgrade-all say the same
 * thing (docs/marketplace.md "Refusals"). Registry and configuration refusals carry kebab-case
 * codes; install refusals carry UPPER_SNAKE codes with their data (platform-facts D). Messages
 * never carry a caller's input: names and versions in them come from the registry or the store.
 */
import { HttpError, serverError } from "../platform/http/errors";
import { CONTRACT_LABEL, type DeclarationKind } from "./contract";
import { retryAfterSeconds } from "./lease";

export const registryNotConfigured = () =>
  serverError("marketplace-registry-not-configured", "marketplace registry not configured (set MARKETPLACE_REGISTRY_URL)");

export const registryUnavailable = (why: string) => serverError("marketplace-registry-unavailable", `marketplace registry unavailable: ${why}`);

export const registryInvalid = (why: string) => serverError("marketplace-registry-invalid", `marketplace registry answered an invalid index: ${why}`);

/** Retriable (spec §4.10): `Retry-After` says when the holder's lease lapses at the latest. */
export const lockHeld = (retryAfterMs: number) =>
  serverError("marketplace_locked", "the fleet marketplace lock is held by another marketplace operation; retry shortly", {
    reason: "another marketplace operation holds the fleet lock",
    retryAfterSeconds: retryAfterSeconds(retryAfterMs),
  });

export const pluginNotFound = () => new HttpError(404, "plugin not found in the registry");
export const versionNotFound = () => new HttpError(404, "the plugin has no such version in the registry");
export const notInstalled = () => new HttpError(404, "plugin is not installed");

export const alreadyInstalled = (ref: string, version: string) =>
  new HttpError(409, `${ref} is already installed (${version}); use POST /api/marketplace/update`, "PLUGIN_ALREADY_INSTALLED", {
    ref,
    installed_version: version,
  });

export const versionIncompatible = (ref: string, version: string) =>
  new HttpError(409, `${ref} ${version} does not support ${CONTRACT_LABEL}`, "VERSION_INCOMPATIBLE", { ref, version, contract: CONTRACT_LABEL });

export const noCompatibleVersion = (ref: string) =>
  new HttpError(409, `no published version of ${ref} supports ${CONTRACT_LABEL}`, "NO_COMPATIBLE_VERSION", { ref, contract: CONTRACT_LABEL });

/** The registry published a version whose bundle breaks the contract it claims: the registry's fault. */
export const bundleInvalid = (ref: string, version: string, problems: string[]) =>
  serverError("PLUGIN_BUNDLE_INVALID", `${ref} ${version} has an invalid declarations bundle: ${problems.slice(0, 5).join("; ")}`, {
    extra: { ref, version, problems },
  });

/** The bundle is well-formed, but this deployment's policy refuses a declaration in it. */
export const declarationRefused = (ref: string, version: string, problems: string[]) =>
  new HttpError(422, `${ref} ${version} declares what this deployment refuses: ${problems.slice(0, 5).join("; ")}`, "PLUGIN_DECLARATION_REFUSED", {
    ref,
    version,
    problems,
  });

/** Who owns a declaration the plugin would overwrite: another plugin's ref, `operator` or `builtin`. */
export interface Collision {
  kind: DeclarationKind;
  name: string;
  owner: string;
}

export const collision = (ref: string, collisions: Collision[]) =>
  new HttpError(
    409,
    `${ref} would replace declarations it does not own: ${collisions.map((c) => `${c.kind} ${c.name} (${c.owner})`).join(", ")}`,
    "DECLARATION_COLLISION",
    { ref, collisions },
  );

/** Something outside the plugin that stands on a declaration about to be removed. */
export interface Dependent {
  kind: "route" | "preset" | "agent";
  name: string;
  depends_on: { kind: DeclarationKind; name: string };
}

export const inUse = (ref: string, dependents: Dependent[]) =>
  new HttpError(
    409,
    `${ref}: declarations it would remove are still in use: ${dependents.map((d) => `${d.kind} ${d.name} uses ${d.depends_on.kind} ${d.depends_on.name}`).join(", ")} (remove them first, or pass force: true)`,
    "PLUGIN_IN_USE",
    { ref, dependents },
  );
