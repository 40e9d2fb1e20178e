/**
 * The registry index (docs/marketplace.md "The index format"): one JSON document listing every
 * plugin a registry publishes, with its versions. Validated whole with zod when fetched. A version's
 * `declarations` stay opaque (bounded JSON) here: only a version this build can install (one that
 * lists bridge-declarations 1) is parsed as a bundle, when it is used, so a registry may publish
 * versions for newer builds, with sections this one does not know, without breaking the index.
 */
import { z } from "zod";
import { boundedJsonObject } from "../platform/http/bounded-json";
import { MAX_VERSION_LENGTH, compareVersions, isSemver } from "./semver";

/** The `format` an index declares; a later, incompatible layout gets another value. */
export const INDEX_FORMAT = "bridge-marketplace-index/1";

/** Caps on an index (beside the byte cap of MARKETPLACE_REGISTRY_MAX_BYTES). */
export const MAX_PLUGINS = 1000;
export const MAX_VERSIONS_PER_PLUGIN = 200;
export const MAX_ADVISORIES_PER_PLUGIN = 100;
/** A version's declarations as compact JSON. */
export const MAX_BUNDLE_BYTES = 512 * 1024;

/** A namespace or plugin name as registries spell it; compared (and shown in `ref`) lowercased. */
export const PLUGIN_NAME_PART = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const NAME_RULE = "must be 1-64 characters of letters, digits, _ . and -, starting with a letter or digit";
export const PluginNamePart = z.string().regex(PLUGIN_NAME_PART, { message: NAME_RULE });

export const Semver = z.string().max(MAX_VERSION_LENGTH).refine(isSemver, { message: "must be a semantic version (SemVer 2.0.0, e.g. 1.2.3)" });

export const Category = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, { message: "must be 1-64 characters of a-z, 0-9 and -" });
/** A declaration kind as an index advertises it: this build's kinds, or a newer build's. */
export const KindName = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, { message: "must be 1-64 characters of a-z, 0-9 and _, starting with a letter" });
const ContractName = z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, { message: "must be 1-64 characters of a-z, 0-9 and -" });

const httpsUrl = z
  .string()
  .max(2048)
  .refine(
    (s) => {
      try {
        const u = new URL(s);
        return u.protocol === "https:" && !u.username && !u.password;
      } catch {
        return false;
      }
    },
    { message: "must be an https URL without user:password" },
  );

export const RegistryAdvisory = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, { message: "must be 1-128 characters of letters, digits, _ . : and -" }),
    severity: z.enum(["low", "moderate", "high", "critical"]),
    summary: z.string().min(1).max(2000),
    /** The exact versions it concerns. */
    affected_versions: z.array(Semver).min(1).max(MAX_VERSIONS_PER_PLUGIN),
    fixed_in: Semver.nullable().default(null),
    url: httpsUrl.nullable().default(null),
  })
  .strict();
export type RegistryAdvisory = z.infer<typeof RegistryAdvisory>;

export const RegistryVersion = z
  .object({
    version: Semver,
    /** Contract name → the versions of it this version's bundle is written for. */
    contracts: z
      .record(ContractName, z.array(z.number().int().min(1).max(1_000_000)).min(1).max(32))
      .refine((c) => Object.keys(c).length <= 16, { message: "at most 16 contracts" }),
    /** The bundle; parsed against the contract only when this build installs the version. */
    declarations: boundedJsonObject(MAX_BUNDLE_BYTES),
  })
  .strict();
export type RegistryVersion = z.infer<typeof RegistryVersion>;

export const RegistryPlugin = z
  .object({
    namespace: PluginNamePart,
    name: PluginNamePart,
    description: z.string().max(4096).default(""),
    categories: z.array(Category).max(16).default([]),
    /** The declaration kinds the plugin provides (what search by kind matches). */
    kinds: z.array(KindName).min(1).max(16),
    advisories: z.array(RegistryAdvisory).max(MAX_ADVISORIES_PER_PLUGIN).default([]),
    versions: z.array(RegistryVersion).min(1).max(MAX_VERSIONS_PER_PLUGIN),
  })
  .strict()
  .superRefine((p, ctx) => {
    p.versions.forEach((v, i) => {
      // Refinements may run beside issues elsewhere in the plugin: compare only real versions.
      if (isSemver(v.version) && p.versions.findIndex((w) => isSemver(w.version) && compareVersions(w.version, v.version) === 0) !== i) {
        ctx.addIssue({ code: "custom", path: ["versions", i, "version"], message: "lists a version twice (build metadata does not tell versions apart)" });
      }
    });
    p.advisories.forEach((a, i) => {
      if (p.advisories.findIndex((b) => b.id === a.id) !== i)
        ctx.addIssue({ code: "custom", path: ["advisories", i, "id"], message: "lists an advisory id twice" });
    });
  });
export type RegistryPlugin = z.infer<typeof RegistryPlugin>;

export const RegistryIndex = z
  .object({
    format: z.literal(INDEX_FORMAT),
    plugins: z.array(RegistryPlugin).max(MAX_PLUGINS),
  })
  .strict()
  .superRefine((index, ctx) => {
    const refs = index.plugins.map(refOf);
    refs.forEach((r, i) => {
      if (refs.indexOf(r) !== i) ctx.addIssue({ code: "custom", path: ["plugins", i], message: "lists a plugin twice (namespace/name compare without case)" });
    });
  });
export type RegistryIndex = z.infer<typeof RegistryIndex>;

/** A plugin's ref: lowercase `namespace/name` (platform-facts A6). */
export function refOf(p: { namespace: string; name: string }): string {
  return `${p.namespace}/${p.name}`.toLowerCase();
}

/** A `namespace/name` given by a caller (any case), as the body field `ref`. */
export const PluginRef = z
  .string()
  .trim()
  .max(129)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\/[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, { message: `must be namespace/name, each part ${NAME_RULE}` })
  .transform((s) => s.toLowerCase());

/** The plugin with `ref` in the index, or undefined. */
export function findPlugin(index: RegistryIndex, ref: string): RegistryPlugin | undefined {
  return index.plugins.find((p) => refOf(p) === ref);
}
