/**
 * The layout of the access epochs (src/platform/epochs/rpc.ts): how many shard objects hold the
 * tokens, and how many replicas of each an isolate may read. Env only. Readers and writers must
 * agree on it, and during a gradual deploy isolates of the old and the new version run side by
 * side: a layout is therefore changed in steps (docs/operations.md "Changing the epoch layout"),
 * with ACCESS_EPOCH_ALSO_BUMP naming the other layout so that every writer bumps the objects that
 * either version reads.
 */
import { type EnvVars, envVar } from "../env";
import { type EnvVars as SettingVars, defineSetting, envString, wholeNumber } from "./define";

/** A layout of the access epochs: `shards` objects of `replicas` replicas each. */
export interface EpochLayout {
  shards: number;
  replicas: number;
}

/** Layouts ACCESS_EPOCH_ALSO_BUMP may name at once (a change needs one). */
const MAX_ALSO = 4;
const LAYOUT_TEXT = /^(\d{1,4})x(\d{1,2})$/;

export const EPOCH_LAYOUT = {
  shards: wholeNumber("ACCESS_EPOCH_SHARDS", {
    area: "access-control",
    default: 8,
    min: 1,
    max: 1024,
    overlay: false,
    description:
      "Shard objects holding the access epochs that validate the isolate caches of keys and routes; all of them together bound the deployment's message rate (docs/performance.md, capacity model).",
  }),
  replicas: wholeNumber("ACCESS_EPOCH_REPLICAS", {
    area: "access-control",
    default: 4,
    min: 1,
    max: 64,
    overlay: false,
    description:
      "Replicas of each access-epoch shard: a write bumps them all, each isolate reads one, so one busy route or key spreads its epoch checks over this many objects.",
  }),
  also: defineSetting({
    name: "ACCESS_EPOCH_ALSO_BUMP",
    area: "access-control",
    type: "list",
    default: null,
    overlay: false,
    secret: false,
    description:
      'Comma-separated other epoch layouts, each `<shards>x<replicas>` (e.g. `8x4`), that every write bumps as well as the current one (at most 4): set while a layout change rolls out, so isolates still reading the other layout see every revoke (docs/operations.md, "Changing the epoch layout"). Unset: none.',
    read(env: SettingVars, errors: string[]): EpochLayout[] {
      const raw = envString(env, "ACCESS_EPOCH_ALSO_BUMP")?.trim();
      if (!raw) return [];
      const out: EpochLayout[] = [];
      for (const part of raw
        .split(",")
        .map((p) => p.trim())
        .filter(Boolean)) {
        const m = LAYOUT_TEXT.exec(part);
        const shards = m ? Number(m[1]) : 0;
        const replicas = m ? Number(m[2]) : 0;
        if (!m || shards < 1 || shards > 1024 || replicas < 1 || replicas > 64) {
          errors.push("ACCESS_EPOCH_ALSO_BUMP must list layouts as <shards>x<replicas> (shards 1 to 1024, replicas 1 to 64), comma-separated");
          return [];
        }
        out.push({ shards, replicas });
      }
      if (out.length > MAX_ALSO) {
        errors.push(`ACCESS_EPOCH_ALSO_BUMP lists at most ${MAX_ALSO} layouts`);
        return [];
      }
      return out;
    },
  }),
};

export const EPOCH_SETTINGS = Object.values(EPOCH_LAYOUT);

/** The layout in force for `env` (an invalid value falls back to its default; check-config names it). */
export function epochLayout(env: EnvVars): EpochLayout {
  const ignored: string[] = [];
  const vars = { [EPOCH_LAYOUT.shards.name]: envVar(env, EPOCH_LAYOUT.shards.name), [EPOCH_LAYOUT.replicas.name]: envVar(env, EPOCH_LAYOUT.replicas.name) };
  return { shards: EPOCH_LAYOUT.shards.read(vars, ignored), replicas: EPOCH_LAYOUT.replicas.read(vars, ignored) };
}

/**
 * Every layout a write bumps: the one in force first, then those ACCESS_EPOCH_ALSO_BUMP names
 * (a malformed list names none; check-config reports it), without repeats.
 */
export function bumpLayouts(env: EnvVars): EpochLayout[] {
  const current = epochLayout(env);
  const ignored: string[] = [];
  const also = EPOCH_LAYOUT.also.read({ [EPOCH_LAYOUT.also.name]: envVar(env, EPOCH_LAYOUT.also.name) }, ignored);
  const out = [current];
  for (const l of also) if (!out.some((o) => o.shards === l.shards && o.replicas === l.replicas)) out.push(l);
  return out;
}
