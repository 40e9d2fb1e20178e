/**
 * Changing the overlay: `POST /api/config/env` (set and unset names), a profile's apply (replace
 * the whole overlay) and `POST /api/config/reload` (bump the generation, re-seal what an older key
 * sealed). Each one reads the overlay, builds the candidate, validates it with parseSettings over
 * the Worker's env, and writes it in one guarded batch (overlay-store.ts). A refused candidate
 * writes nothing. The isolate that wrote installs the result at once; the others within
 * `SETTINGS_REFRESH_SECONDS`.
 */
import { z } from "zod";
import type { KeyRing } from "../connectors/rpc";
import { badRequest, conflict } from "../platform/http/errors";
import type { ConfigSettings } from "../platform/settings/config-settings";
import { isOverlayable } from "../platform/settings/registry";
import { type Entry, checkNames, checkSecretKeys, secretFlag, validateAgainst, valueText } from "./entries";
import { baseEnvOf, envConfig, isolateSettings } from "./isolate-settings";
import { type OverlayRow, type StoredOverlay, readOverlay, writeOverlay } from "./overlay-store";
import { type Statement, all, d1 } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { SealedEntries, openText, overlayAad, profileAad, sealText, sealedByOlderKey, sealingRing, settingsKeyRing } from "./secrets";
import { must } from "../platform/must";

/** A profile version's sealed entries, as a re-seal reads them. */
const SealedProfileRow = z.object({ name: z.string(), version: z.number(), sealed: z.string() });

export interface EnvChange {
  set?: Record<string, unknown>;
  unset?: string[];
  secret_keys?: string[];
}

export interface EnvChangeResult {
  generation: number;
  set: string[];
  unset: string[];
}

/**
 * The stored overlay's entries in force, secrets opened: rows this build does not let the overlay
 * set are left out (they are not applied either). An unopenable secret is a 409 naming it, so the
 * caller can set or unset it.
 */
export async function openOverlay(stored: StoredOverlay, config: ConfigSettings, skip: ReadonlySet<string> = new Set()): Promise<Map<string, Entry>> {
  const rows = stored.rows.filter((r) => isOverlayable(r.name) && !skip.has(r.name));
  const ring = rows.some((r) => r.secret === 1) ? await settingsKeyRing(config) : null;
  const out = new Map<string, Entry>();
  for (const row of rows) {
    out.set(row.name, { value: await openRow(ring, row), secret: row.secret === 1 });
  }
  return out;
}

async function openRow(ring: KeyRing | null, row: OverlayRow): Promise<string> {
  if (row.secret !== 1) return row.value;
  const plain = await openText(ring, row.value, overlayAad(row.name));
  if (plain === null) throw conflict(`${row.name}: its stored secret value cannot be opened with the settings keys; set it again or unset it`);
  return plain;
}

/** Seals the secret entries of `entries` for the overlay. */
async function overlayUpserts(entries: ReadonlyMap<string, Entry>, config: ConfigSettings): Promise<Array<{ name: string; value: string; secret: boolean }>> {
  const ring = [...entries.values()].some((e) => e.secret) ? await sealingRing(config) : null;
  const out: Array<{ name: string; value: string; secret: boolean }> = [];
  for (const [name, e] of entries)
    out.push({
      name,
      value: e.secret ? await sealText(must(ring, "the sealing ring for a secret entry"), e.value, overlayAad(name)) : e.value,
      secret: e.secret,
    });
  return out;
}

/** `POST /api/config/env`: validates the whole candidate, then writes only the named rows. */
export async function changeEnv(env: object, db: D1Database, change: EnvChange, nowIso: string): Promise<EnvChangeResult> {
  const setNames = Object.keys(change.set ?? {});
  const unset = [...new Set(change.unset ?? [])];
  const marked = change.secret_keys ?? [];
  checkNames("set", setNames);
  checkNames("unset", unset);
  checkSecretKeys("secret_keys", marked, new Set(setNames));
  if (setNames.some((n) => unset.includes(n))) throw badRequest("invalid body: a setting may not be both set and unset in one request");
  if (!setNames.length && !unset.length) throw badRequest("invalid body: nothing to change: give set and/or unset");

  const base = baseEnvOf(env);
  const config = envConfig(base);
  const stored = await readOverlay(db);
  const wasSecret = new Set(stored.rows.filter((r) => r.secret === 1).map((r) => r.name));
  // Rows about to be replaced or dropped need not open; every other row is part of the candidate.
  const candidate = await openOverlay(stored, config, new Set([...setNames, ...unset]));
  const written = new Map<string, Entry>();
  for (const name of setNames) {
    // A name once secret stays secret until it is unset: re-setting it never exposes the new value.
    const e = {
      value: valueText("set", name, must(change.set, "the set of a change that sets names")[name]),
      secret: secretFlag(name, marked.includes(name) || wasSecret.has(name)),
    };
    candidate.set(name, e);
    written.set(name, e);
  }
  validateAgainst(base, candidate);
  const upserts = await overlayUpserts(written, config);
  const generation = await writeOverlay(db, { expectedGeneration: stored.generation, upserts, deletes: unset, now: nowIso });
  await isolateSettings.reload(base, "write");
  return { generation, set: setNames.sort(), unset: unset.sort() };
}

/** A profile apply: the overlay becomes exactly `entries` (already opened), after validation. */
export async function replaceOverlay(env: object, db: D1Database, entries: ReadonlyMap<string, Entry>, nowIso: string): Promise<number> {
  const base = baseEnvOf(env);
  const config = envConfig(base);
  checkNames("env", [...entries.keys()]);
  validateAgainst(base, entries);
  const stored = await readOverlay(db);
  const upserts = await overlayUpserts(entries, config);
  const generation = await writeOverlay(db, { expectedGeneration: stored.generation, replaceAll: true, upserts, deletes: [], now: nowIso });
  await isolateSettings.reload(base, "write");
  return generation;
}

/**
 * `POST /api/config/reload` and `POST /api/fleet/reload-config`: bumps the generation, so every
 * isolate re-reads the overlay within the refresh bound (this one at once), and re-seals under the
 * current key every overlay and profile secret an older key sealed (a key rotation's second step).
 */
export async function reloadSettings(env: object, db: D1Database, nowIso: string): Promise<{ generation: number; resealed: number }> {
  const base = baseEnvOf(env);
  const config = envConfig(base);
  const stored = await readOverlay(db);
  const ring = config.keys.current ? await settingsKeyRing(config) : null;
  const upserts: Array<{ name: string; value: string; secret: boolean }> = [];
  const extra: Statement[] = [];
  if (ring) {
    for (const row of stored.rows) {
      if (row.secret !== 1 || !sealedByOlderKey(ring, row.value)) continue;
      const plain = await openText(ring, row.value, overlayAad(row.name));
      if (plain !== null) upserts.push({ name: row.name, value: await sealText(ring, plain, overlayAad(row.name)), secret: true });
    }
    const profiles = await all(SealedProfileRow, d1(db)`SELECT name, version, sealed FROM config_profiles WHERE sealed <> '{}'`);
    for (const p of profiles) {
      const sealed: Record<string, unknown> = parseStored(SealedEntries, p.sealed, "config_profiles.sealed");
      let changed = false;
      for (const [name, blob] of Object.entries(sealed)) {
        const text = JSON.stringify(blob);
        if (!sealedByOlderKey(ring, text)) continue;
        const plain = await openText(ring, text, profileAad(p.name, name));
        if (plain === null) continue;
        sealed[name] = JSON.parse(await sealText(ring, plain, profileAad(p.name, name)));
        changed = true;
      }
      if (changed) extra.push(d1(db)`UPDATE config_profiles SET sealed = ${JSON.stringify(sealed)} WHERE name = ${p.name} AND version = ${p.version}`);
    }
  }
  const generation = await writeOverlay(db, { expectedGeneration: stored.generation, upserts, deletes: [], now: nowIso, extra });
  await isolateSettings.reload(base, "write");
  return { generation, resealed: upserts.length + extra.length };
}
