/**
 * The settings an isolate runs with: the Worker's env with the D1 overlay on top, validated by the
 * same `parseSettings` as the env alone (docs/runtime-settings.md).
 *
 * Cost on the per-message path: none in steady state. Each isolate caches the overlay (its
 * generation and opened values) and the parsed result per env object. A request serves the cache;
 * at most every `SETTINGS_REFRESH_SECONDS` (default 2 s) one request starts a background check
 * (`waitUntil`) that reads the generation (one small statement) and re-reads the overlay only when
 * the generation moved. Only an isolate's first request (cold cache) waits for D1. A write made in
 * this isolate installs the new overlay at once (`reload`).
 *
 * Durable Objects read the same per-isolate cache synchronously (`peek`): a stale cache starts the
 * same background check, a cold one starts the load and answers with the env alone until it lands;
 * an object that can await (constructor, cron) calls `ensure` instead.
 *
 * No in-flight promise is ever shared between requests (workerd refuses I/O across request
 * contexts): only plain data crosses, and a cold isolate's concurrent first requests each load.
 */
import { envVar } from "../platform/env";
import { type ConfigSettings, parseConfigSettings } from "../platform/settings/config-settings";
import { isOverlayable } from "../platform/settings/registry";
import { type SettingsResult, parseSettings, settingsFor } from "../platform/settings/settings";
import { readGeneration, readOverlay } from "./overlay-store";
import { openText, overlayAad, settingsKeyRing } from "./secrets";

/** The overlay as one isolate holds it: plain values (secrets opened), by name. */
export interface OverlaySnapshot {
  generation: number;
  values: Readonly<Record<string, string>>;
  /** Names whose values are secret (never shown). */
  secretNames: ReadonlySet<string>;
  /** Stored names this build does not let the overlay set (a setting removed or made env-only): not applied. */
  ignored: readonly string[];
  /** Problems that make the effective settings invalid; they name settings, never values. */
  errors: readonly string[];
  /** When this isolate loaded it (epoch ms). */
  loadedAt: number;
}

/** What a request or an object runs with. */
export interface Effective {
  /** The overlay generation in force; null while an object's cold cache is still loading. */
  generation: number | null;
  /** The env with the overlay on top (the env itself when the overlay is empty). */
  env: Record<string, unknown>;
  result: SettingsResult;
  snapshot: OverlaySnapshot | null;
}

/** The last thing this isolate did to its settings, for `GET /api/fleet/workers`. */
export interface LastOp {
  op: "load" | "refresh" | "check" | "write" | "check-failed";
  generation: number | null;
  at: number;
}

/** A background check still marked running after this long is taken as lost (a cancelled waitUntil). */
const LOST_CHECK_MS = 10_000;

const configOf = new WeakMap<object, ConfigSettings>();

/** The overlay machinery's own settings, from the env alone (they cannot be overlaid). */
export function envConfig(env: object): ConfigSettings {
  let c = configOf.get(env);
  if (!c) {
    c = parseConfigSettings(env as Record<string, unknown>, []);
    configOf.set(env, c);
  }
  return c;
}

function dbOf(env: object): D1Database | null {
  const db = envVar(env as Record<string, unknown>, "DB");
  return db && typeof (db as D1Database).prepare === "function" ? (db as D1Database) : null;
}

/** Reads the overlay and opens its secrets. An unopenable secret is an error naming the setting. */
export async function loadSnapshot(env: object, nowMs: number): Promise<OverlaySnapshot> {
  const db = dbOf(env);
  if (!db) return { generation: 0, values: {}, secretNames: new Set(), ignored: [], errors: [], loadedAt: nowMs };
  const stored = await readOverlay(db);
  const config = envConfig(env);
  const ring = stored.rows.some((r) => r.secret === 1) ? await settingsKeyRing(config) : null;
  const values: Record<string, string> = {};
  const secretNames = new Set<string>();
  const ignored: string[] = [];
  const errors: string[] = [];
  for (const row of stored.rows) {
    if (!isOverlayable(row.name)) {
      ignored.push(row.name);
      continue;
    }
    if (row.secret === 1) {
      secretNames.add(row.name);
      const plain = await openText(ring, row.value, overlayAad(row.name));
      if (plain === null) {
        errors.push(
          config.keys.current
            ? `${row.name} (settings overlay): its stored value cannot be opened with SETTINGS_ENCRYPTION_KEY or SETTINGS_ENCRYPTION_KEY_PREVIOUS`
            : `${row.name} (settings overlay): a secret value is stored but SETTINGS_ENCRYPTION_KEY is not set`,
        );
        continue;
      }
      values[row.name] = plain;
    } else {
      values[row.name] = row.value;
    }
  }
  return { generation: stored.generation, values, secretNames, ignored, errors, loadedAt: nowMs };
}

const baseOf = new WeakMap<object, Record<string, unknown>>();

/** The Worker's own env behind an effective env (itself when nothing was overlaid). */
export function baseEnvOf(env: object): Record<string, unknown> {
  return baseOf.get(env) ?? (env as Record<string, unknown>);
}

/** The env with the overlay's values on top. Pure but for remembering the base (baseEnvOf). */
export function mergeEnv(base: object, values: Readonly<Record<string, string>>): Record<string, unknown> {
  if (!Object.keys(values).length) return base as Record<string, unknown>;
  const merged: Record<string, unknown> = { ...(base as Record<string, unknown>), ...values };
  baseOf.set(merged, baseEnvOf(base));
  return merged;
}

/**
 * `base` with the overlay that `eff` was evaluated with on top, typed as `base` is (the Effective's
 * own env is an untyped record). Its base is remembered, as for `mergeEnv`.
 */
export function overlaid<E extends object>(base: E, eff: Effective): E {
  const values = eff.snapshot?.values;
  if (!values || !Object.keys(values).length) return base;
  const merged = { ...base, ...values };
  baseOf.set(merged, baseEnvOf(base));
  return merged;
}

/** parseSettings over the merged env, with the snapshot's own problems first. */
export function evaluate(base: object, snapshot: OverlaySnapshot | null): Effective {
  if (!snapshot) return { generation: null, env: base as Record<string, unknown>, result: settingsFor(base), snapshot: null };
  const env = mergeEnv(base, snapshot.values);
  const parsed = env === base ? settingsFor(base) : parseSettings(env);
  const result: SettingsResult = snapshot.errors.length ? { ok: false, errors: [...snapshot.errors, ...(parsed.ok ? [] : parsed.errors)] } : parsed;
  return { generation: snapshot.generation, env, result, snapshot };
}

export interface IsolateSettingsOptions {
  /** The clock (epoch ms); tests drive the refresh bound through it. */
  now?: () => number;
  /** Overrides `SETTINGS_REFRESH_SECONDS` (ms). */
  refreshMs?: number;
}

export type WaitUntil = (p: Promise<unknown>) => void;

/** One isolate's overlay cache. The Worker and the objects of the isolate share `isolateSettings`. */
export class IsolateSettings {
  private snapshot: OverlaySnapshot | null = null;
  private checkedAt = 0;
  private checking: { token: number; startedAt: number } | null = null;
  private tokens = 0;
  /** Bumped by every install: a background check that started before it must not overwrite it. */
  private epoch = 0;
  private readonly effective = new WeakMap<object, Effective>();
  private last: LastOp | null = null;
  /** The D1 binding of the first successful load; background checks read through it. */
  private db: D1Database | null = null;
  private readonly now: () => number;

  constructor(private readonly opts: IsolateSettingsOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  /** The Worker's path: serves the cache, blocking only when it is cold; a stale cache is re-checked in the background. */
  async forRequest(env: object, waitUntil?: WaitUntil): Promise<Effective> {
    if (!this.snapshot) {
      await this.load(env, "load");
    } else if (this.isStale(env)) {
      this.startCheck(env, waitUntil);
    }
    return this.view(env);
  }

  /**
   * The objects' synchronous path: never waits; a cold cache answers with the env alone while it
   * loads. A cold cache is "stale" from the start (checked at 0); after a failed load the next try
   * waits one interval, as after any failed check.
   */
  peek(env: object): Effective {
    if (this.isStale(env)) this.startCheck(env, undefined);
    return this.view(env);
  }

  /** Awaits a loaded cache (an object's constructor, the cron); a stale one is checked in the background. */
  async ensure(env: object, waitUntil?: WaitUntil): Promise<Effective> {
    return this.forRequest(env, waitUntil);
  }

  /** Re-reads the overlay now (after a write in this isolate) and installs it. */
  async reload(env: object, op: LastOp["op"] = "write"): Promise<Effective> {
    await this.load(env, op);
    return this.view(env);
  }

  /**
   * Drops the cache, as a fresh isolate starts. For a runtime whose D1 is replaced under it: the
   * workers test files share one runtime and start each file from a newly migrated database.
   */
  reset(): void {
    this.epoch += 1;
    this.snapshot = null;
    this.checkedAt = 0;
    this.checking = null;
    this.last = null;
    this.db = null;
  }

  /** The overlay this isolate holds (null before the first load); no side effect. */
  current(): OverlaySnapshot | null {
    return this.snapshot;
  }

  /** The generation in force here (null before the first load). */
  generation(): number | null {
    return this.snapshot?.generation ?? null;
  }

  /** When the generation was last confirmed against D1 (epoch ms; 0 before the first load). */
  checkedAtMs(): number {
    return this.checkedAt;
  }

  lastOp(): LastOp | null {
    return this.last;
  }

  /** The refresh interval for `env` in ms. */
  refreshMs(env: object): number {
    return this.opts.refreshMs ?? envConfig(env).refreshSeconds * 1000;
  }

  private isStale(env: object): boolean {
    return this.now() - this.checkedAt >= this.refreshMs(env);
  }

  private view(env: object): Effective {
    const snap = this.snapshot;
    if (!snap) return evaluate(env, null);
    const cached = this.effective.get(env);
    if (cached && cached.snapshot === snap) return cached;
    const eff = evaluate(env, snap);
    this.effective.set(env, eff);
    return eff;
  }

  private async load(env: object, op: LastOp["op"]): Promise<void> {
    const snap = await loadSnapshot(env, this.now());
    this.db ??= dbOf(env);
    this.install(snap, op);
  }

  private install(snap: OverlaySnapshot, op: LastOp["op"]): void {
    this.epoch += 1;
    this.snapshot = snap;
    this.checkedAt = this.now();
    this.last = { op, generation: snap.generation, at: this.checkedAt };
  }

  private startCheck(env: object, waitUntil: WaitUntil | undefined): void {
    const now = this.now();
    if (this.checking && now - this.checking.startedAt < LOST_CHECK_MS) return;
    const token = ++this.tokens;
    this.checking = { token, startedAt: now };
    const p = this.check(env, this.epoch)
      .catch((err) => {
        // Keep serving what we have; the next check comes one interval later, not on every request.
        this.checkedAt = this.now();
        this.last = { op: "check-failed", generation: this.snapshot?.generation ?? null, at: this.checkedAt };
        console.error("settings overlay: checking the generation failed; serving the cached settings", err instanceof Error ? err.message : "unknown error");
      })
      .finally(() => {
        if (this.checking?.token === token) this.checking = null;
      });
    if (waitUntil) waitUntil(p);
  }

  private async check(env: object, epoch: number): Promise<void> {
    if (this.snapshot) {
      // The isolate's own D1 handle (the one it first loaded through): a background check belongs to
      // the isolate, not to the request that happened to start it.
      const db = this.db ?? dbOf(env);
      const generation = db ? await readGeneration(db) : 0;
      if (epoch !== this.epoch) return;
      if (generation === this.snapshot.generation) {
        this.checkedAt = this.now();
        this.last = { op: "check", generation, at: this.checkedAt };
        return;
      }
    }
    const snap = await loadSnapshot(this.db ? { ...(env as Record<string, unknown>), DB: this.db } : env, this.now());
    if (epoch !== this.epoch) return;
    this.install(snap, this.snapshot ? "refresh" : "load");
  }
}

/** This isolate's cache, shared by the Worker's requests, its cron and the objects it hosts. */
export const isolateSettings = new IsolateSettings();

/** This isolate's name and start, made on first use (workerd allows no randomness or clock at global scope). */
let identity: { id: string; startedAt: number } | null = null;
export function isolateIdentity(): { id: string; startedAt: number } {
  identity ??= { id: `isolate-${crypto.randomUUID()}`, startedAt: Date.now() };
  return identity;
}

/** Is `path` one of the doors that repair the overlay (served on the env alone when the overlay breaks the settings)? */
export function isRepairPath(path: string): boolean {
  return path === "/api/config" || path.startsWith("/api/config/");
}

export type RequestSettings = { ok: true; env: Record<string, unknown>; result: Extract<SettingsResult, { ok: true }> } | { ok: false; errors: string[] };

/**
 * The settings a request runs with. When the overlay makes them invalid but the env alone is
 * valid, the `/api/config/*` doors still run (on the env alone), so an operator can repair the
 * overlay with the doors that wrote it; every other door answers the invalid-configuration 500.
 */
export async function requestSettings(env: object, path: string, waitUntil?: WaitUntil): Promise<RequestSettings> {
  const eff = await isolateSettings.forRequest(env, waitUntil);
  if (eff.result.ok) return { ok: true, env: eff.env, result: eff.result };
  if (isRepairPath(path)) {
    const alone = settingsFor(env);
    if (alone.ok) return { ok: true, env: env as Record<string, unknown>, result: alone };
  }
  return { ok: false, errors: eff.result.errors };
}
