/** Checkpoint sweep (spec §4.8, decisions §4): the admin purge of idle agent memory. */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import { sweepCheckpoints } from "../checkpoints/sweep";

export const checkpointsRouter = new Hono<AppEnv>();

addRoute(
  checkpointsRouter,
  {
    method: "post",
    path: "/api/checkpoints/sweep",
    summary: "Delete every thread whose newest checkpoint is older than the idle TTL (admin)",
    description:
      "Acts on the d1 provider with LLM_PROVIDER_CHECKPOINT_TTL_MINUTES set. On kv (expires natively) or memory, or with no TTL, it is a reported no-op carrying `skipped`. swept_threads lists at most 1000 ids; swept_count is exact.",
    area: "checkpoints",
    auth: { tag: "checkpoints", admin: true },
    response: z.object({
      provider: z.string(),
      ttl_minutes: z.number().nullable(),
      swept_count: z.number().int(),
      swept_threads: z.array(z.string()),
      skipped: z.string().optional(),
    }),
  },
  (c) => sweepCheckpoints(c.env, c.get("settings"), new Date()),
);
