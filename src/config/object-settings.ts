/**
 * The settings a Durable Object's owed work runs with: the env with the runtime overlay on top
 * (docs/runtime-settings.md) and its parsed settings. Every object that awaits its settings before
 * acting (an alarm, a verb that may store media) loads them here, so each one falls back and logs
 * the same way.
 */
import type { Env } from "../platform/env";
import type { Settings } from "../platform/settings/settings";
import { type Effective, isolateSettings, overlaid } from "./isolate-settings";

/** What an object's work runs with. */
export interface ObjectSettings {
  env: Env;
  settings: Settings;
}

export interface ObjectSettingsOptions {
  /** How log lines name the object ("interaction", "tool run"). */
  name: string;
  /** What the object does while the configuration is invalid, for the log line; null logs nothing. */
  whenInvalid: string | null;
}

/** One typed env per overlaid env the isolate's cache holds, so downstream per-env caches keep hitting. */
const typedEnvs = new WeakMap<object, Env>();

function typedEnv(env: Env, eff: Effective): Env {
  let typed = typedEnvs.get(eff.env);
  if (!typed) {
    typed = overlaid(env, eff);
    typedEnvs.set(eff.env, typed);
  }
  return typed;
}

/**
 * The settings with the runtime overlay, awaited so a cold isolate does not act on the env alone.
 * When D1 cannot be read for the overlay, what this isolate holds (the env alone when cold); null
 * while the configuration is invalid (the object tries again later).
 */
export async function loadObjectSettings(env: Env, opts: ObjectSettingsOptions): Promise<ObjectSettings | null> {
  let eff: Effective;
  try {
    eff = await isolateSettings.ensure(env);
  } catch (err) {
    console.error(`${opts.name}: loading the settings overlay failed; using the cached settings`, err instanceof Error ? err.message : "unknown error");
    eff = isolateSettings.peek(env);
  }
  if (!eff.result.ok) {
    if (opts.whenInvalid !== null) console.error(`${opts.name}: the configuration is invalid; ${opts.whenInvalid}`);
    return null;
  }
  return { env: typedEnv(env, eff), settings: eff.result.settings };
}

/**
 * The settings this isolate holds now, without waiting (for an object's per-message path: no D1
 * statement per call; a stale cache is re-checked in the background). Null while the
 * configuration is invalid: the caller falls back to its defaults.
 */
export function objectSettingsNow(env: Env): Settings | null {
  const r = isolateSettings.peek(env).result;
  return r.ok ? r.settings : null;
}

/** The env with the runtime overlay this isolate holds now on top, without waiting (the overlaid `CHANNEL_*` values, say). */
export function objectEnvNow(env: Env): Env {
  return typedEnv(env, isolateSettings.peek(env));
}
