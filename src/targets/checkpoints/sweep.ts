import type { Env } from "../../platform/env";
import type { Settings } from "../../platform/settings/settings";
import { sweepD1Checkpoints } from "./d1";

/** The answer of `POST /api/checkpoints/sweep` (decisions §4). */
export interface SweepReport {
  provider: string;
  ttl_minutes: number | null;
  swept_count: number;
  swept_threads: string[];
  skipped?: string;
}

/**
 * Deletes every thread idle past the TTL on a SQL provider. On `kv` and `memory`, or with no
 * TTL, it is a reported no-op: those providers expire on their own, or nothing expires.
 */
export async function sweepCheckpoints(env: Env, settings: Settings, now: Date): Promise<SweepReport> {
  const { provider, ttlMinutes } = settings.checkpoint;
  const base = { provider, ttl_minutes: ttlMinutes, swept_count: 0, swept_threads: [] as string[] };
  if (provider === "kv") return { ...base, skipped: "the kv provider expires idle threads natively (Durable Object alarm)" };
  if (provider === "memory") return { ...base, skipped: "the memory provider lives for the isolate and expires idle threads on access" };
  if (provider !== "d1") return { ...base, skipped: "this checkpoint provider is not available in this build" };
  if (ttlMinutes === null) return { ...base, skipped: "LLM_PROVIDER_CHECKPOINT_TTL_MINUTES is unset, so checkpoints are kept forever" };
  const { count, threads } = await sweepD1Checkpoints(env.DB, now.getTime() - Math.round(ttlMinutes * 60_000));
  return { ...base, swept_count: count, swept_threads: threads };
}
