/**
 * Settings profiles (docs/runtime-settings.md "Profiles"): named snapshots
 * `{description, env, secret_keys}` kept as append-only versions. The newest version is the
 * profile; a rollback appends a copy of an older one; apply makes the overlay exactly the
 * profile's env (validated first, one atomic write, generation bumped). Names starting with `@`
 * are reserved.
 *
 * Secret entries (the registry's secrets plus `secret_keys`) are sealed at rest and never shown:
 * a view maps them to null. In a PUT, null for a name in `secret_keys` keeps that secret's value
 * from the current version, so reading a profile, editing it and writing it back never needs the
 * secret.
 */
import { z } from "zod";
import { constantTimeEqual } from "../access-control/crypto";
import { boundedJsonObject } from "../platform/http/bounded-json";
import { badRequest, notFound } from "../platform/http/errors";
import type { ConfigSettings } from "../platform/settings/config-settings";
import { isSecretSetting } from "../platform/settings/registry";
import { type Entry, MAX_ENTRIES, checkNames, checkSecretKeys, secretFlag, validateAgainst, valueText } from "./entries";
import { baseEnvOf, envConfig } from "./isolate-settings";
import { readOverlay } from "./overlay-store";
import { openOverlay, replaceOverlay } from "./overlay-writes";
import { CountRow, batch, d1, first, join, rowsOf, run, trusted } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { type Sealed, SealedEntries, openText, profileAad, sealEntry, sealingRing, settingsKeyRing } from "./secrets";
import { must } from "../platform/must";

const NAME_RULE = "must be 1 to 64 characters of letters, digits, _ . - starting with a letter or digit";

/** A profile name: `@`-prefixed names are reserved (checked first, so the message says so). */
export const ProfileName = z
  .string()
  .refine((s) => !s.startsWith("@"), { message: "names starting with @ are reserved", abort: true })
  .refine((s) => /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(s), { message: NAME_RULE });
export type ProfileName = z.infer<typeof ProfileName>;

export const ProfileVersion = z.coerce
  .number({ error: "must be a whole number of at least 1" })
  .int({ error: "must be a whole number of at least 1" })
  .min(1)
  .max(1_000_000_000);

/**
 * `PUT /api/config/profiles/{name}`. `env` values are text (numbers, booleans, objects and arrays
 * are taken as their text, as the env would carry them), or null for a kept secret.
 */
export const ProfileBody = z
  .object({
    description: z.string().max(1000).default(""),
    // Bounded (depth, size) before anything walks it: a value is stringified to its env text.
    env: boundedJsonObject(1024 * 1024).meta({ description: "Setting name → value as env text (null keeps a secret's stored value)." }),
    secret_keys: z.array(z.string().max(128)).max(MAX_ENTRIES).default([]),
  })
  .strict();
export type ProfileBody = z.infer<typeof ProfileBody>;

/** A profile version as the doors show it: secret values are null. */
export const ProfileView = z
  .object({
    name: z.string(),
    version: z.number().int(),
    description: z.string(),
    env: z.record(z.string(), z.string().nullable()),
    secret_keys: z.array(z.string()),
    created_at: z.string(),
  })
  .strict();
export type ProfileView = z.infer<typeof ProfileView>;

/** A profile (its newest version) or one version, without values. */
export const ProfileSummary = z
  .object({
    name: z.string(),
    version: z.number().int(),
    description: z.string(),
    names: z.array(z.string()),
    secret_keys: z.array(z.string()),
    created_at: z.string(),
  })
  .strict();
export type ProfileSummary = z.infer<typeof ProfileSummary>;

/** One stored version (config_profiles). */
export const ProfileRow = z
  .object({
    name: z.string(),
    version: z.number().int(),
    description: z.string(),
    env: z.string(),
    sealed: z.string(),
    secret_keys: z.string(),
    created_at: z.string(),
  })
  .strict();
export type ProfileRow = z.infer<typeof ProfileRow>;

export const profileNotFound = () => notFound("profile not found");
export const versionNotFound = () => notFound("profile version not found");

const COLUMN_NAMES = ["name", "version", "description", "env", "sealed", "secret_keys", "created_at"] as const;
const COLUMNS = trusted(COLUMN_NAMES.join(", "));

/** A version's `env` column: its plain (not secret) entries, name → env text. */
export const ProfileEnv = z.record(z.string(), z.string());
/** A version's `secret_keys` column: the names marked secret beyond the registry's. */
export const ProfileSecretKeys = z.array(z.string());

export const plainEnvOf = (row: Pick<ProfileRow, "env">) => parseStored(ProfileEnv, row.env, "config_profiles.env");
export const secretKeysOf = (row: Pick<ProfileRow, "secret_keys">) => parseStored(ProfileSecretKeys, row.secret_keys, "config_profiles.secret_keys");
export const sealedOf = (row: Pick<ProfileRow, "sealed">) => parseStored(SealedEntries, row.sealed, "config_profiles.sealed");

function namesOf(row: ProfileRow): string[] {
  return [...Object.keys(plainEnvOf(row)), ...Object.keys(sealedOf(row))].sort();
}

export function viewOf(row: ProfileRow): ProfileView {
  const env: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(plainEnvOf(row))) env[k] = v;
  for (const k of Object.keys(sealedOf(row))) env[k] = null;
  const sorted = Object.fromEntries(
    Object.keys(env)
      .sort()
      .map((k) => [k, env[k]]),
  );
  return {
    name: row.name,
    version: row.version,
    description: row.description,
    env: sorted,
    secret_keys: secretKeysOf(row),
    created_at: row.created_at,
  };
}

export function summaryOf(row: ProfileRow): ProfileSummary {
  return {
    name: row.name,
    version: row.version,
    description: row.description,
    names: namesOf(row),
    secret_keys: secretKeysOf(row),
    created_at: row.created_at,
  };
}

export async function latest(db: D1Database, name: string): Promise<ProfileRow | null> {
  return first(ProfileRow, d1(db)`SELECT ${COLUMNS} FROM config_profiles WHERE name = ${name} ORDER BY version DESC LIMIT 1`);
}

export async function versionOf(db: D1Database, name: string, version: number): Promise<ProfileRow | null> {
  return first(ProfileRow, d1(db)`SELECT ${COLUMNS} FROM config_profiles WHERE name = ${name} AND version = ${version}`);
}

/** The newest version, or the given one: 404 for a missing profile or version. */
export async function pick(db: D1Database, name: string, version?: number): Promise<ProfileRow> {
  const row = version === undefined ? await latest(db, name) : await versionOf(db, name, version);
  if (!row) {
    if (version !== undefined && (await latest(db, name))) throw versionNotFound();
    throw profileNotFound();
  }
  return row;
}

export async function listProfiles(db: D1Database, offset: number, limit: number): Promise<{ items: ProfileSummary[]; total: number }> {
  const rowsRead = d1(db)`SELECT ${join(COLUMN_NAMES.map((c) => trusted(`p.${c}`)))} FROM config_profiles p
         JOIN (SELECT name, MAX(version) AS v FROM config_profiles GROUP BY name) m ON p.name = m.name AND p.version = m.v
         ORDER BY p.name LIMIT ${limit} OFFSET ${offset}`;
  const countRead = d1(db)`SELECT COUNT(DISTINCT name) AS n FROM config_profiles`;
  const [rows, count] = await batch(db, [rowsRead, countRead]);
  return { items: rowsOf(ProfileRow, rows.results, rowsRead.text).map(summaryOf), total: rowsOf(CountRow, count.results, countRead.text)[0]?.n ?? 0 };
}

export async function listVersions(db: D1Database, name: string, offset: number, limit: number): Promise<{ items: ProfileSummary[]; total: number }> {
  const rowsRead = d1(db)`SELECT ${COLUMNS} FROM config_profiles WHERE name = ${name} ORDER BY version DESC LIMIT ${limit} OFFSET ${offset}`;
  const countRead = d1(db)`SELECT COUNT(*) AS n FROM config_profiles WHERE name = ${name}`;
  const [rows, count] = await batch(db, [rowsRead, countRead]);
  const total = rowsOf(CountRow, count.results, countRead.text)[0]?.n ?? 0;
  if (!total) throw profileNotFound();
  return { items: rowsOf(ProfileRow, rows.results, rowsRead.text).map(summaryOf), total };
}

/** A version's entries with its secrets opened (for apply, diff and a PUT that keeps secrets). */
export async function openProfile(row: ProfileRow, config: ConfigSettings): Promise<Map<string, Entry>> {
  const out = new Map<string, Entry>();
  for (const [k, v] of Object.entries(plainEnvOf(row))) out.set(k, { value: v, secret: false });
  const sealed = sealedOf(row);
  const names = Object.keys(sealed);
  if (names.length) {
    const ring = await settingsKeyRing(config);
    for (const k of names) {
      const plain = await openText(ring, JSON.stringify(sealed[k]), profileAad(row.name, k));
      if (plain === null)
        throw badRequest(`profile entry ${k}: its stored secret value cannot be opened with the settings keys; put the profile again with its value`);
      out.set(k, { value: plain, secret: true });
    }
  }
  return out;
}

/**
 * `PUT`: validates the names, values and the Worker's env with this env as the overlay, seals the
 * secrets and appends the next version. Returns the new version's view.
 */
export async function putProfile(
  env: object,
  db: D1Database,
  name: string,
  body: ProfileBody,
  nowIso: string,
): Promise<{ created: boolean; profile: ProfileView }> {
  const names = Object.keys(body.env);
  checkNames("env", names);
  const nameSet = new Set(names);
  checkSecretKeys("secret_keys", body.secret_keys, nameSet);
  const marked = new Set(body.secret_keys);
  const base = baseEnvOf(env);
  const config = envConfig(base);
  const current = await latest(db, name);
  const kept = current && names.some((n) => body.env[n] === null) ? await openProfile(current, config) : new Map<string, Entry>();

  const entries = new Map<string, Entry>();
  for (const n of names) {
    const secret = secretFlag(n, marked.has(n));
    const v = body.env[n];
    if (v === null) {
      const old = kept.get(n);
      if (!secret || !old || !old.secret)
        throw badRequest(`invalid body: env.${n}: null keeps a stored secret, and this profile holds none under that name (give the value)`);
      entries.set(n, old);
    } else {
      entries.set(n, { value: valueText("env", n, v), secret });
    }
  }
  validateAgainst(base, entries);

  const plain: Record<string, string> = {};
  const sealed: Record<string, Sealed> = {};
  const secretNames = [...entries].filter(([, e]) => e.secret).map(([n]) => n);
  const ring = secretNames.length ? await sealingRing(config) : null;
  for (const [n, e] of [...entries].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (e.secret) sealed[n] = await sealEntry(must(ring, "the sealing ring for a secret entry"), e.value, profileAad(name, n));
    else plain[n] = e.value;
  }
  const row = await first(
    ProfileRow,
    d1(db)`INSERT INTO config_profiles (${COLUMNS})
       SELECT ${name}, COALESCE(MAX(version), 0) + 1, ${body.description}, ${JSON.stringify(plain)}, ${JSON.stringify(sealed)}, ${JSON.stringify(secretNames.sort())}, ${nowIso}
       FROM config_profiles WHERE name = ${name}
       RETURNING ${COLUMNS}`,
  );
  const written = must(row, "the profile version just inserted");
  return { created: written.version === 1, profile: viewOf(written) };
}

/** `POST …/rollback`: appends a copy of `version` as the newest version. */
export async function rollbackProfile(db: D1Database, name: string, version: number, nowIso: string): Promise<ProfileView> {
  await pick(db, name, version);
  const row = await first(
    ProfileRow,
    d1(db)`INSERT INTO config_profiles (${COLUMNS})
       SELECT name, (SELECT MAX(version) FROM config_profiles WHERE name = ${name}) + 1, description, env, sealed, secret_keys, ${nowIso}
       FROM config_profiles WHERE name = ${name} AND version = ${version}
       RETURNING ${COLUMNS}`,
  );
  if (!row) throw versionNotFound();
  return viewOf(row);
}

export async function deleteProfile(db: D1Database, name: string): Promise<number> {
  const meta = await run(d1(db)`DELETE FROM config_profiles WHERE name = ${name}`);
  const n = meta.changes ?? 0;
  if (!n) throw profileNotFound();
  return n;
}

/** `POST …/apply`: the overlay becomes the profile's env. */
export async function applyProfile(
  env: object,
  db: D1Database,
  name: string,
  version: number | undefined,
  nowIso: string,
): Promise<{ name: string; version: number; generation: number; names: string[] }> {
  const row = await pick(db, name, version);
  const entries = await openProfile(row, envConfig(baseEnvOf(env)));
  const generation = await replaceOverlay(env, db, entries, nowIso);
  return { name, version: row.version, generation, names: [...entries.keys()].sort() };
}

export const ProfileDiff = z
  .object({
    name: z.string(),
    version: z.number().int(),
    generation: z.number().int(),
    added: z.array(z.object({ name: z.string(), secret: z.boolean(), value: z.string().optional() }).strict()),
    removed: z.array(z.object({ name: z.string(), secret: z.boolean(), value: z.string().optional() }).strict()),
    changed: z.array(z.object({ name: z.string(), secret: z.boolean(), from: z.string().optional(), to: z.string().optional() }).strict()),
    unchanged: z.array(z.string()),
  })
  .strict();
export type ProfileDiff = z.infer<typeof ProfileDiff>;

/**
 * `POST …/diff`: what applying the profile would change in the live overlay. Names added by the
 * profile, removed from the overlay, changed and unchanged; values only of non-secrets.
 */
export async function diffProfile(env: object, db: D1Database, name: string, version: number | undefined): Promise<ProfileDiff> {
  const row = await pick(db, name, version);
  const config = envConfig(baseEnvOf(env));
  const profile = await openProfile(row, config);
  const stored = await readOverlay(db);
  const live = await openOverlay(stored, config);
  const out: ProfileDiff = { name, version: row.version, generation: stored.generation, added: [], removed: [], changed: [], unchanged: [] };
  const shown = (n: string, e: Entry) => !e.secret && !isSecretSetting(n);
  for (const [n, e] of [...profile].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const cur = live.get(n);
    const secret = !shown(n, e) || (cur !== undefined && !shown(n, cur));
    if (!cur) out.added.push(secret ? { name: n, secret } : { name: n, secret, value: e.value });
    else if (secret ? !constantTimeEqual(cur.value, e.value) || cur.secret !== e.secret : cur.value !== e.value)
      out.changed.push(secret ? { name: n, secret } : { name: n, secret, from: cur.value, to: e.value });
    else out.unchanged.push(n);
  }
  for (const [n, cur] of [...live].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (profile.has(n)) continue;
    const secret = !shown(n, cur);
    out.removed.push(secret ? { name: n, secret } : { name: n, secret, value: cur.value });
  }
  return out;
}
