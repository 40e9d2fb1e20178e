/**
 * The runtime-settings sections (docs/backup.md, docs/runtime-settings.md): `settings-overlay`
 * (the overlay's non-secret values), `settings-secrets` (secret: the overlay's secret values and
 * the profiles' secret entries, sealed) and `profiles` (every version of every profile, secret
 * values left out).
 *
 * Secret settings are sealed at rest under the deployment's `SETTINGS_ENCRYPTION_KEY`. An export
 * opens each and seals it again for its place (the overlay's name, or a profile version's entry;
 * src/backup/secret-values.ts) under the same key, so an admin's export never holds a secret in
 * the clear; the import opens it with the target's keys (current or previous) and seals it at rest
 * under the target's current key.
 *
 * The overlay is written by `changeEnv`, the code of `POST /api/config/env`: the Worker's env with
 * the resulting overlay must pass `parseSettings`, and the rows and the generation bump are one
 * guarded batch. The overlay's non-secret and secret values are one candidate (a rule may tie a
 * setting to a secret one), so when both sections come in one import they are validated and
 * written together, in one batch.
 */
import { HttpError } from "../../platform/http/errors";
import { type Entry, MAX_ENTRIES, MAX_VALUE_CHARS, checkNames, validateAgainst } from "../../config/entries";
import { baseEnvOf, envConfig } from "../../config/isolate-settings";
import { readOverlay } from "../../config/overlay-store";
import { changeEnv, openOverlay } from "../../config/overlay-writes";
import { ProfileName, ProfileRow, openProfile, plainEnvOf, secretKeysOf } from "../../config/profiles";
import { encryptionNotConfigured, profileAad, sealText, sealingRing } from "../../config/secrets";
import { type Statement, all, d1 } from "../../platform/persistence/d1";
import { isOverlayable, isSecretSetting } from "../../platform/settings/registry";
import { z } from "zod";
import type { ProfileBackupRow, SectionName, SettingSecretBackupRow } from "../rows";
import { BackupSealer, backupAad, openBackupSecret } from "../secret-values";
import { type ImportContext, atRow, defineSection, parseAtRow, refuseDuplicates, rowFault, runBatch } from "../section";
import { must } from "../../platform/must";

const OVERLAY_PLAN = "settings-overlay-plan";
const OPENED_SECRETS = "settings-secrets-opened";

/** Where a sealed secret setting may be restored: the overlay's name, or one profile version's entry. */
function settingSecretAad(row: Pick<SettingSecretBackupRow, "kind" | "name"> & { profile?: string; version?: number }): string {
  return row.kind === "overlay"
    ? backupAad("settings-secrets", "overlay", row.name)
    : backupAad("settings-secrets", "profile", must(row.profile, "a profile secret's profile"), String(row.version), row.name);
}

/** This import's `settings-secrets` values by row index, opened (each sealed one for its own place only; memoized). */
async function openedSecretValues(ctx: ImportContext): Promise<string[]> {
  const known = ctx.memo.get(OPENED_SECRETS) as string[] | undefined;
  if (known) return known;
  const out: string[] = [];
  for (const [i, row] of (ctx.rows["settings-secrets"] ?? []).entries())
    out.push(await openBackupSecret(ctx, "settings-secrets", i, "value", row.value, settingSecretAad(row)));
  ctx.memo.set(OPENED_SECRETS, out);
  return out;
}
const OVERLAY_WRITTEN = "settings-overlay-written";

interface OverlayPlan {
  set: Record<string, string>;
  secretKeys: string[];
}

/** A value as the env would carry it: text, within the overlay's bound (src/config/entries.ts). */
function envText(section: SectionName, i: number, field: string, value: string): string {
  if (value.length > MAX_VALUE_CHARS) throw rowFault(section, i, field, `must be at most ${MAX_VALUE_CHARS} characters`);
  return value;
}

function notOverlayable(): string {
  return "is not a setting the overlay may set (GET /api/config/settings-schema lists them; bindings, ACCESS_CONTROL_BOOTSTRAP_TOKEN, SETTINGS_*, CHANNEL_*_API_BASE and CONNECTORS_PROVIDERS stay env-only)";
}

/** The overlay rows of both sections, checked as one candidate (memoized: both sections ask). */
async function overlayPlan(ctx: ImportContext): Promise<OverlayPlan> {
  const known = ctx.memo.get(OVERLAY_PLAN) as OverlayPlan | undefined;
  if (known) return known;
  const plain = ctx.rows["settings-overlay"] ?? [];
  const secrets = (ctx.rows["settings-secrets"] ?? []).flatMap((r, index) => (r.kind === "overlay" ? [{ index, row: r }] : []));
  refuseDuplicates("settings-overlay", plain, (r) => r.name, "name");
  const set: Record<string, string> = {};
  for (const [i, row] of plain.entries()) {
    if (!isOverlayable(row.name)) throw rowFault("settings-overlay", i, "name", notOverlayable());
    if (isSecretSetting(row.name)) throw rowFault("settings-overlay", i, "name", "is a secret setting: its value belongs in settings-secrets");
    set[row.name] = envText("settings-overlay", i, "value", row.value);
  }
  const secretKeys: string[] = [];
  const opened = await openedSecretValues(ctx);
  for (const { index, row } of secrets) {
    if (!isOverlayable(row.name)) throw rowFault("settings-secrets", index, "name", notOverlayable());
    if (Object.hasOwn(set, row.name)) throw rowFault("settings-secrets", index, "name", "is set twice (here and in settings-overlay or an earlier row)");
    set[row.name] = envText("settings-secrets", index, "value", opened[index]);
    secretKeys.push(row.name);
  }
  const names = Object.keys(set);
  if (names.length > MAX_ENTRIES) throw new HttpError(400, `invalid document: sections.settings-overlay: at most ${MAX_ENTRIES} settings in one import`);
  const base = baseEnvOf(ctx.env);
  const config = envConfig(base);
  if (secretKeys.length && !config.keys.current) throw encryptionNotConfigured();
  if (names.length) {
    // The candidate `POST /api/config/env` would validate: the stored overlay with these on top.
    const candidate = await openOverlay(await readOverlay(ctx.db), config, new Set(names));
    for (const name of names) candidate.set(name, { value: set[name], secret: secretKeys.includes(name) || isSecretSetting(name) });
    try {
      validateAgainst(base, candidate);
    } catch (err) {
      if (err instanceof HttpError)
        throw new HttpError(400, `invalid document: sections.settings-overlay${secretKeys.length ? " with settings-secrets" : ""}: ${err.message}`);
      throw err;
    }
  }
  const plan = { set, secretKeys };
  ctx.memo.set(OVERLAY_PLAN, plan);
  return plan;
}

/** Writes the overlay plan once, through the overlay door's code (validated again, guarded batch, generation bumped). */
async function writeOverlayOnce(ctx: ImportContext): Promise<void> {
  if (ctx.memo.get(OVERLAY_WRITTEN)) return;
  ctx.memo.set(OVERLAY_WRITTEN, true);
  const plan = await overlayPlan(ctx);
  if (!Object.keys(plan.set).length) return;
  await changeEnv(ctx.env, ctx.db, { set: plan.set, secret_keys: plan.secretKeys }, ctx.nowIso);
}

export const settingsOverlaySection = defineSection({
  name: "settings-overlay",
  secret: false,
  description: "The runtime settings overlay's non-secret values (setting name → env text).",
  async exportRows(ctx) {
    const stored = await readOverlay(ctx.db);
    return stored.rows.filter((r) => r.secret === 0 && isOverlayable(r.name)).map((r) => ({ name: r.name, value: r.value }));
  },
  async validate(rows, ctx) {
    await overlayPlan(ctx);
    return rows.length;
  },
  async apply(count, ctx) {
    await writeOverlayOnce(ctx);
    return { applied: count };
  },
});

/** A stored profile version's sealed entries, opened (a key that cannot open them is a 409, as the overlay's). */
async function openedProfileSecrets(row: ProfileRow, config: ReturnType<typeof envConfig>): Promise<Map<string, Entry>> {
  try {
    return await openProfile(row, config);
  } catch (err) {
    if (err instanceof HttpError) throw new HttpError(409, err.message);
    throw err;
  }
}

async function profileRows(db: D1Database): Promise<ProfileRow[]> {
  return all(ProfileRow, d1(db)`SELECT name, version, description, env, sealed, secret_keys, created_at FROM config_profiles ORDER BY name, version`);
}

export const settingsSecretsSection = defineSection({
  name: "settings-secrets",
  secret: true,
  description:
    "Secret settings: the overlay's secret values and every profile version's secret entries, each sealed under SETTINGS_ENCRYPTION_KEY for its place (a setting of the overlay, or a profile version's entry): it opens only in a deployment holding that key (current or previous), where the import seals it again at rest.",
  async exportRows(ctx) {
    const config = envConfig(baseEnvOf(ctx.env));
    const sealer = new BackupSealer(ctx);
    const stored = await readOverlay(ctx.db);
    const out: SettingSecretBackupRow[] = [];
    if (stored.rows.some((r) => r.secret === 1 && isOverlayable(r.name))) {
      const opened = await openOverlay(stored, config);
      for (const [name, e] of opened)
        if (e.secret) out.push({ kind: "overlay", name, value: await sealer.seal(e.value, settingSecretAad({ kind: "overlay", name })) });
    }
    for (const row of await profileRows(ctx.db)) {
      if (row.sealed === "{}") continue;
      for (const [name, e] of await openedProfileSecrets(row, config)) {
        if (!e.secret) continue;
        const place = { kind: "profile" as const, profile: row.name, version: row.version, name };
        out.push({ ...place, value: await sealer.seal(e.value, settingSecretAad(place)) });
      }
    }
    return out;
  },
  async validate(rows, ctx) {
    await overlayPlan(ctx);
    // Overlay names repeated are refused by the overlay candidate's check above.
    refuseDuplicates("settings-secrets", rows, (r) => (r.kind === "profile" ? JSON.stringify([r.profile, r.version, r.name]) : `overlay:${r.name}`), "setting");
    const opened = await openedSecretValues(ctx);
    for (const [i, row] of rows.entries()) {
      if (row.kind !== "profile") continue;
      envText("settings-secrets", i, "value", opened[i]);
      const version = (ctx.rows.profiles ?? []).find((p) => p.name === row.profile)?.versions.find((v) => v.version === row.version);
      if (!version)
        throw rowFault(
          "settings-secrets",
          i,
          "profile",
          "names no profile version of this import's profiles section (a profile's secrets are imported with the profile)",
        );
      if (!version.secret_keys.includes(row.name)) throw rowFault("settings-secrets", i, "name", "is not among that profile version's secret_keys");
    }
    return rows.length;
  },
  async apply(count, ctx) {
    // Profile entries are sealed into the profiles section's own batch.
    await writeOverlayOnce(ctx);
    return { applied: count };
  },
});

const ProfileDescription = z.string().max(1000);

interface ProfileVersionPlan {
  version: number;
  description: string;
  env: Record<string, string>;
  secrets: Record<string, string>;
  created_at: string;
}

export const profilesSection = defineSection({
  name: "profiles",
  secret: false,
  description: "Settings profiles, every version; secret entries are named in secret_keys and their values are in settings-secrets.",
  async exportRows(ctx) {
    const byName = new Map<string, ProfileBackupRow["versions"]>();
    for (const row of await profileRows(ctx.db)) {
      const version = {
        version: row.version,
        description: row.description,
        env: plainEnvOf(row),
        secret_keys: secretKeysOf(row),
        created_at: row.created_at,
      };
      byName.set(row.name, [...(byName.get(row.name) ?? []), version]);
    }
    return [...byName].map(([name, versions]) => ({ name, versions }));
  },
  async validate(rows, ctx) {
    refuseDuplicates("profiles", rows, (r) => r.name, "name");
    const base = baseEnvOf(ctx.env);
    const opened = await openedSecretValues(ctx);
    const secretRows = (ctx.rows["settings-secrets"] ?? []).flatMap((r, i) => (r.kind === "profile" ? [{ ...r, value: opened[i] }] : []));
    const plan: Array<{ name: string; versions: ProfileVersionPlan[] }> = [];
    let anySecret = false;
    for (const [i, row] of rows.entries()) {
      parseAtRow("profiles", i, "name", ProfileName, row.name);
      if (row.versions.length === 0) throw rowFault("profiles", i, "versions", "must hold at least one version");
      const seen = new Set<number>();
      const versions: ProfileVersionPlan[] = [];
      for (const [j, v] of row.versions.entries()) {
        if (v.version < 1) throw rowFault("profiles", i, `versions.${j}.version`, "must be at least 1");
        if (seen.has(v.version)) throw rowFault("profiles", i, `versions.${j}.version`, "repeats an earlier version");
        seen.add(v.version);
        parseAtRow("profiles", i, `versions.${j}.description`, ProfileDescription, v.description);
        const names = Object.keys(v.env);
        await atRow("profiles", i, () => checkNames(`versions.${j}.env`, [...names, ...v.secret_keys]));
        const k = names.findIndex((n) => isSecretSetting(n));
        if (k >= 0)
          throw rowFault("profiles", i, `versions.${j}.env.${k}`, "is a secret setting: name it in secret_keys and give its value in settings-secrets");
        const env: Record<string, string> = {};
        for (const [k, n] of names.entries()) env[n] = envText("profiles", i, `versions.${j}.env.${k}`, v.env[n]);
        const secrets: Record<string, string> = {};
        for (const [s, key] of v.secret_keys.entries()) {
          if (Object.hasOwn(v.env, key) || Object.hasOwn(secrets, key))
            throw rowFault("profiles", i, `versions.${j}.secret_keys.${s}`, "names a setting twice");
          const value = secretRows.find((r) => r.profile === row.name && r.version === v.version && r.name === key)?.value;
          if (value === undefined)
            throw rowFault("profiles", i, `versions.${j}.secret_keys.${s}`, "its value is not in this import (import the settings-secrets section with it)");
          secrets[key] = value;
          anySecret = true;
        }
        versions.push({ version: v.version, description: v.description, env, secrets, created_at: v.created_at });
      }
      // The newest version is the profile (what apply would install): it must pass as the door's PUT requires.
      const newest = versions.reduce((a, b) => (b.version > a.version ? b : a));
      const entries = new Map<string, Entry>([
        ...Object.entries(newest.env).map(([n, value]): [string, Entry] => [n, { value, secret: false }]),
        ...Object.entries(newest.secrets).map(([n, value]): [string, Entry] => [n, { value, secret: true }]),
      ]);
      await atRow("profiles", i, () => validateAgainst(base, entries));
      plan.push({ name: row.name, versions });
    }
    if (anySecret && !envConfig(base).keys.current) throw encryptionNotConfigured();
    return plan;
  },
  async apply(plan, ctx) {
    const db = ctx.db;
    const needsRing = plan.some((p) => p.versions.some((v) => Object.keys(v.secrets).length));
    const ring = needsRing ? await sealingRing(envConfig(baseEnvOf(ctx.env))) : null;
    const sealing = () => must(ring, "the sealing ring for a plan with secrets");
    const statements: Statement[] = [];
    for (const p of plan) {
      statements.push(d1(db)`DELETE FROM config_profiles WHERE name = ${p.name}`);
      for (const v of p.versions) {
        const sealed: Record<string, unknown> = {};
        for (const key of Object.keys(v.secrets).sort()) sealed[key] = JSON.parse(await sealText(sealing(), v.secrets[key], profileAad(p.name, key)));
        const env = Object.fromEntries(
          Object.keys(v.env)
            .sort()
            .map((k) => [k, v.env[k]]),
        );
        statements.push(
          d1(db)`INSERT INTO config_profiles (name, version, description, env, sealed, secret_keys, created_at)
            VALUES (${p.name}, ${v.version}, ${v.description}, ${JSON.stringify(env)}, ${JSON.stringify(sealed)}, ${JSON.stringify(Object.keys(sealed))}, ${v.created_at})`,
        );
      }
    }
    await runBatch(db, statements);
    return { applied: plan.length };
  },
});
