/**
 * What the marketplace's write doors answer (docs/marketplace.md "Doors"): the change a plan makes
 * (previews show it before anything is written; install and update show what they did), uninstall's
 * removals and upgrade-all's per-ref results. One zod schema per shape, for the OpenAPI document.
 */
import { z } from "zod";
import { JsonObject } from "../platform/http/bounded-json";
import { DECLARATION_KINDS, type DeclarationKind } from "./contract";
import { InstalledPlugin } from "./installs";
import { declarationView } from "./kinds";
import type { Plan } from "./plan";
import { compareVersions } from "./semver";
import { AdvisoryView } from "./views";

const Kind = z.enum(DECLARATION_KINDS.map((k) => k.kind) as [DeclarationKind, ...DeclarationKind[]]);

export const ChangeEntry = z.object({
  kind: Kind,
  name: z.string(),
  /** The declaration as it will be (was) written; literal header values redacted. */
  declaration: JsonObject,
});
export const RemovedEntry = z.object({ kind: Kind, name: z.string() });

export const ChangeSet = z.object({
  add: z.array(ChangeEntry),
  replace: z.array(ChangeEntry),
  remove: z.array(RemovedEntry),
});
export type ChangeSet = z.infer<typeof ChangeSet>;

export const Preview = z.object({
  /** `install` for a plugin not installed yet, else `update`. */
  operation: z.enum(["install", "update"]),
  ref: z.string(),
  version: z.string(),
  previous_version: z.string().nullable(),
  changes: ChangeSet,
  /** The registry's advisories that name the target version. */
  advisories: z.array(AdvisoryView),
});
export type Preview = z.infer<typeof Preview>;

export const ChangeResult = Preview.extend({ installed: InstalledPlugin });
export type ChangeResult = z.infer<typeof ChangeResult>;

export const UninstallResult = z.object({
  ref: z.string(),
  version: z.string(),
  removed: z.array(RemovedEntry),
});

/** Spec §2.13 / platform-facts A6: one entry per installed ref. */
export const UpgradeOutcome = z.enum(["upgraded", "up-to-date", "no-compatible-version", "failed"]);
export const UpgradeEntry = z.object({ ref: z.string(), outcome: UpgradeOutcome, detail: z.string() });
export type UpgradeEntry = z.infer<typeof UpgradeEntry>;
export const UpgradeAllResult = z.object({ results: z.array(UpgradeEntry) });

export function previewOf(plan: Plan, installedVersion: string | null): Preview {
  const entry = (d: Plan["declarations"][number]) => ({ kind: d.kind, name: d.name, declaration: declarationView(d) });
  return {
    operation: plan.operation,
    ref: plan.ref,
    version: plan.version,
    previous_version: plan.previous_version,
    changes: { add: plan.add.map(entry), replace: plan.replace.map(entry), remove: plan.remove.map((r) => ({ kind: r.kind, name: r.name })) },
    advisories: plan.advisories.map((a) => ({
      ref: plan.ref,
      ...a,
      installed_version: installedVersion,
      affects_installed: installedVersion !== null && a.affected_versions.some((v) => compareVersions(v, installedVersion) === 0),
    })),
  };
}
