import { Hono } from "hono";
import type { AppEnv } from "../../platform/http/app-env";
import { buildOpenApiDocument } from "../../platform/http/openapi";
import { addPublicRoute } from "../../platform/http/route";

export const openapiRouter = new Hono<AppEnv>();

let cached: Record<string, unknown> | null = null;

addPublicRoute(
  openapiRouter,
  {
    method: "get",
    path: "/api/openapi.json",
    summary: "This API's OpenAPI 3.1 document (not wrapped in {data})",
    area: "system",
    auth: { public: true },
  },
  // The registry is complete once the module graph has loaded; build once per isolate.
  (c) => c.json((cached ??= buildOpenApiDocument())),
);
