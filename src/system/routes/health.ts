import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { addPublicRoute } from "../../platform/http/route";

export const healthRouter = new Hono<AppEnv>();

addPublicRoute(
  healthRouter,
  {
    method: "get",
    path: "/api/health",
    summary: "Liveness: answers while the Worker runs and its settings are valid",
    area: "system",
    auth: { public: true },
    response: z.object({ status: z.literal("ok") }),
  },
  () => ({ status: "ok" }),
);
