/**
 * Sub-MCP doors (docs/mcp.md "Sub-MCP endpoints"): declare, list and remove apps, each
 * a chosen subset of the registry served as an MCP server (Streamable HTTP) at
 * `/api/sub-mcp/{slug}/mcp`. The declaration doors are tagged `tools` (an app exposes tools; it
 * grants nothing: every call runs under its caller's own grants). The endpoint takes any valid api
 * key (x-api-key or Bearer) and authorizes each tool by that key.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../platform/http/app-env";
import { notFound } from "../platform/http/errors";
import { addRoute } from "../platform/http/route";
import { waitUntilOf } from "../platform/http/wait-until";
import { serveSubMcp } from "./server";
import { SubMcpApp, SubMcpBody, deleteApp, getServedApp, listApps, slugSchema, upsertApp } from "./store";
import { assertMayStore, storedByOf } from "../access-control/stored-by";
import { createTargetContext, toolExists } from "../targets/dispatch";

export const subMcpRouter = new Hono<AppEnv>();

addRoute(
  subMcpRouter,
  {
    method: "post",
    path: "/api/sub-mcp",
    summary: "Create or replace a sub-MCP app (a tool subset served as an MCP server)",
    description:
      "`{slug, tools, transport?}`: `tools` are registry names (any kind, `<server>.<tool>` included), each registered now (400 naming the first that is not) and each one the caller may run itself (403 naming it by position; the app serves a tool only while its writer may still run it); `transport` is `http` (Streamable HTTP, the default and only one). The app is served at `/api/sub-mcp/{slug}/mcp`. Re-posting a slug replaces its tools.",
    area: "tools",
    auth: { tag: "tools" },
    stores: [{ kind: "tool", at: "tools[]" }],
    body: SubMcpBody,
    response: z.object({ created: z.boolean(), app: SubMcpApp }),
  },
  async (c, { body, principal }) => {
    const ctx = createTargetContext(c.env, c.get("settings"));
    // An app serves its tools to other keys: bounded by what the writer may run itself.
    for (const [i, name] of body.tools.entries()) assertMayStore(principal, `tools[${i}]`, [{ kind: "tool", name }]);
    return upsertApp(c.env.DB, body, (name) => toolExists(ctx, name), new Date().toISOString(), storedByOf(principal));
  },
);

addRoute(
  subMcpRouter,
  {
    method: "get",
    path: "/api/sub-mcp",
    summary: "List the sub-MCP apps",
    area: "tools",
    auth: { tag: "tools" },
    response: z.object({ items: z.array(SubMcpApp), total: z.number().int() }),
  },
  async (c) => {
    const items = await listApps(c.env.DB);
    return { items, total: items.length };
  },
);

addRoute(
  subMcpRouter,
  {
    method: "delete",
    path: "/api/sub-mcp/{slug}",
    summary: "Remove a sub-MCP app",
    description: "Its endpoint answers 404 from then on. Unknown slug 404.",
    area: "tools",
    auth: { tag: "tools" },
    params: z.object({ slug: slugSchema }),
    response: z.object({ removed: z.literal(true), slug: z.string() }),
    errors: [404],
  },
  async (c, { params }) => {
    await deleteApp(c.env.DB, params.slug);
    return { removed: true as const, slug: params.slug };
  },
);

addRoute(
  subMcpRouter,
  {
    method: "post",
    path: "/api/sub-mcp/{slug}/mcp",
    links: "mint",
    summary: "The app's MCP endpoint (Streamable HTTP, stateless, JSON answers)",
    description:
      "JSON-RPC 2.0 per the MCP Streamable HTTP transport: `initialize`, `tools/list` (the app's tools the caller may run), `tools/call` (authorized again, run through the dispatcher as the caller). The request must accept `application/json` and `text/event-stream` and send `application/json`. Answers are JSON-RPC messages, not `{data}` envelopes. Unknown slug 404 `{error}`; GET and DELETE are 405 (no sessions, no server-sent stream).",
    area: "tools",
    auth: { authenticated: true },
    params: z.object({ slug: slugSchema }),
    rawBody: true,
    produces: "application/json",
    errors: [404],
  },
  async (c, { params, raw, principal }) => {
    const served = await getServedApp(c.env.DB, params.slug);
    if (!served) throw notFound("sub-mcp app not found");
    const ctx = createTargetContext(c.env, c.get("settings"));
    return serveSubMcp(
      { env: c.env, ctx, app: served.app, writer: served, principal, request: { method: c.req.method, path: c.req.path }, waitUntil: waitUntilOf(c) },
      c.req.raw,
      raw ?? new Uint8Array(),
    );
  },
);
