/**
 * `POST /api/api-tools` (docs/manifest.md "API tools"): one OpenAPI 3.x operation becomes
 * an API tool, a registry tool that calls the operation with its own method, path, query, header
 * and body parameters. Deliberately not the reference's meaning (which projects operator operations
 * as MCP tools; docs/manifest.md). Admin-only, like every declaration that sends headers.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import { ApiToolView, apiToolView, checkApiToolDeclaration, upsertApiTool } from "../../targets/tools/api-tool-store";
import { ApiToolImport, declarationFromOperation, fetchOpenApiDocument } from "../openapi-import";
import { edgeFetch } from "../../platform/net/edge-fetch";
import { must } from "../../platform/must";

export const apiToolsRouter = new Hono<AppEnv>();

addRoute(
  apiToolsRouter,
  {
    method: "post",
    path: "/api/api-tools",
    summary: "Make an API tool from an OpenAPI operation (admin)",
    description:
      '`{openapi | openapi_url, operation_id, title?, description?, server_url?, headers?, timeout_seconds?}`. The operation (GET, POST, PUT, PATCH or DELETE) becomes a tool named `title` (default: the operationId): its input schema has one property per parameter (path, query, header) and `body` for a JSON request body, `$ref`s resolved within the document. `headers` are sent with every call (literals, {"env"} or {"connection"} references, as HTTP tools). The URL passes the outbound address guard. A name held by a built-in, an HTTP tool or a preset is 409; posting an existing API tool\'s title replaces it.',
    area: "manifest",
    auth: { tag: "manifest", admin: true },
    stores: [{ kind: "url", at: "server_url" }],
    body: ApiToolImport,
    response: z.object({ created: z.boolean(), tool: ApiToolView }),
    errors: [409],
  },
  async (c, { body }) => {
    const settings = c.get("settings");
    const doc =
      body.openapi ?? (await fetchOpenApiDocument(edgeFetch, must(body.openapi_url, "openapi_url (the body names openapi or openapi_url)"), settings));
    const declaration = declarationFromOperation(doc as Record<string, unknown>, body, body.openapi_url);
    checkApiToolDeclaration(declaration, settings, c.env);
    const { created, tool } = await upsertApiTool(c.env.DB, declaration, new Date().toISOString(), settings.connectors.providers);
    return { created, tool: apiToolView(tool) };
  },
);
