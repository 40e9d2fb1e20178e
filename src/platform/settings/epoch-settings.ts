/**
 * The layout of the access epochs (src/platform/epochs/rpc.ts): how many shard objects hold the
 * tokens, and how many replicas of each an isolate may read. Env only, since every isolate and
 * object must agree on it at once; a deployment may change it freely, as the tokens live in
 * memory and a new layout just misses each cache once.
 */
import { type EnvVars, envVar } from "../env";
import { wholeNumber } from "./define";

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
};

export const EPOCH_SETTINGS = Object.values(EPOCH_LAYOUT);

/** The layout in force for `env` (an invalid value falls back to its default; check-config names it). */
export function epochLayout(env: EnvVars): { shards: number; replicas: number } {
  const ignored: string[] = [];
  const vars = { [EPOCH_LAYOUT.shards.name]: envVar(env, EPOCH_LAYOUT.shards.name), [EPOCH_LAYOUT.replicas.name]: envVar(env, EPOCH_LAYOUT.replicas.name) };
  return { shards: EPOCH_LAYOUT.shards.read(vars, ignored), replicas: EPOCH_LAYOUT.replicas.read(vars, ignored) };
}
