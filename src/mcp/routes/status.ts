/**
 * MCP status doors (docs/mcp.md "Listing and status"): each declared server's listing
 * state (`pending`, `ok`, `failed`, `deregistered`), its registered tools, the tools it skipped
 * and its last error (a label, a status or a JSON-RPC code; never server text or a secret);
 * reload one server, every failed one, or deregister one until its next reload. Tagged `manifest`.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import { StatusList, deregisterServer, reloadAll, reloadServer, statusList } from "../config";
import { mcpTitleSchema } from "../declarations";
import { McpStatusView } from "../listing";
import { createTargetContext } from "../../targets/dispatch";

export const mcpStatusRouter = new Hono<AppEnv>();

const titleParams = z.object({ title: mcpTitleSchema });

addRoute(
  mcpStatusRouter,
  {
    method: "get",
    path: "/api/mcp-status",
    summary: "Every declared MCP server's listing status",
    description: "`{items: [{title, status, tools, skipped, last_error, server, checked_at}], total}`, by title.",
    area: "manifest",
    auth: { tag: "manifest" },
    response: StatusList,
  },
  (c) => statusList(c.env.DB),
);

addRoute(
  mcpStatusRouter,
  {
    method: "get",
    path: "/api/mcp-status/failed",
    summary: "The MCP servers whose last listing failed",
    description: "As GET /api/mcp-status, only servers with status `failed`. A failed server keeps the tools of its last good listing.",
    area: "manifest",
    auth: { tag: "manifest" },
    response: StatusList,
  },
  (c) => statusList(c.env.DB, "failed"),
);

addRoute(
  mcpStatusRouter,
  {
    method: "post",
    path: "/api/mcp-status/reload-failed",
    summary: "List every failed MCP server again",
    description: "Answers the reloaded servers' statuses (`{items, total}`); an empty list when none had failed.",
    area: "manifest",
    auth: { tag: "manifest" },
    response: StatusList,
  },
  (c) => reloadAll(createTargetContext(c.env, c.get("settings")), "failed"),
);

addRoute(
  mcpStatusRouter,
  {
    method: "post",
    path: "/api/mcp-status/{title}/reload",
    summary: "List one MCP server again",
    description:
      "A good listing replaces the server's registered tools; a failed one keeps them and records the error. A deregistered server registers again. Unknown title 404.",
    area: "manifest",
    auth: { tag: "manifest" },
    params: titleParams,
    response: McpStatusView,
    errors: [404],
  },
  (c, { params }) => reloadServer(createTargetContext(c.env, c.get("settings")), params.title),
);

addRoute(
  mcpStatusRouter,
  {
    method: "post",
    path: "/api/mcp-status/{title}/deregister",
    summary: "Unregister an MCP server's tools until its next reload",
    description: "The declaration stays (status `deregistered`, no tools); POST …/{title}/reload or /api/tools/reload registers them again. Unknown title 404.",
    area: "manifest",
    auth: { tag: "manifest" },
    params: titleParams,
    response: McpStatusView,
    errors: [404],
  },
  (c, { params }) => deregisterServer(c.env.DB, params.title, new Date().toISOString()),
);
