/**
 * The manifest doors (docs/manifest.md): every operator declaration (HTTP tools,
 * agents, MCP servers, API tools, connectors) as one document, read whole and replaced whole in
 * one D1 batch; the env references it holds; what a replace keeps. Tagged `manifest`; the replace
 * is admin-only, like each declaration door it stands for.
 */
import { Hono } from "hono";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import {
  EnvRefsView,
  ManifestDocument,
  ManifestView,
  PreservedView,
  ReplaceResult,
  applyReplace,
  planReplace,
  readEnvRefs,
  readManifest,
  readPreserved,
} from "../document";
import { reloadServers } from "../../mcp/config";
import { listMcpServers } from "../../mcp/store";
import { createTargetContext } from "../../targets/dispatch";

export const manifestRouter = new Hono<AppEnv>();

addRoute(
  manifestRouter,
  {
    method: "get",
    path: "/api/manifest",
    summary: "Every operator declaration as one document",
    description:
      '`{version: 1, tools, agents, mcp, api_tools, connectors}`: each entry exactly the body of its own declaration door; literal header values read "<redacted>", references as declared. Declarations an installed marketplace plugin owns are not listed (GET /api/manifest/preserved).',
    area: "manifest",
    auth: { tag: "manifest" },
    response: ManifestView,
  },
  (c) => readManifest(c.env.DB, c.get("settings")),
);

addRoute(
  manifestRouter,
  {
    method: "get",
    path: "/api/manifest/mcp-env-refs",
    summary: "The env references the manifest holds",
    description:
      "`{items: [{name, referenced_by, env_set, secret_env_set}], total}`: every {\"env\": NAME} reference (MCP servers' headers, HTTP and API tools' headers, agents' api_key and headers), where it is referenced, and whether a value is there (the Worker env; a POST /api/mcp-config/secret-env value, which MCP servers' references read first). Never a value.",
    area: "manifest",
    auth: { tag: "manifest" },
    response: EnvRefsView,
  },
  (c) => readEnvRefs(c.env.DB, c.env),
);

addRoute(
  manifestRouter,
  {
    method: "get",
    path: "/api/manifest/preserved",
    summary: "What a manifest replace keeps",
    description:
      "`{tools, agents, presets, builtin_tools, builtin_agents, connectors, secret_env}`: HTTP tools and agents owned by installed marketplace plugins, presets, built-ins, the connector providers (the CONNECTORS_PROVIDERS setting) and the stored secret env names. A replace never removes these, and a document entry may not take a plugin's, a built-in's or a preset's name (409).",
    area: "manifest",
    auth: { tag: "manifest" },
    response: PreservedView,
  },
  (c) => readPreserved(c.env.DB, c.get("settings")),
);

addRoute(
  manifestRouter,
  {
    method: "post",
    path: "/api/manifest/replace",
    summary: "Replace every operator declaration with a document (admin)",
    description:
      "The body is a manifest document (GET /api/manifest's shape; sections may be left out, meaning empty). Each entry is validated with its own door's schema and checks, \"<redacted>\" header values stand for the stored value of that header, and the whole document is written in one D1 batch: declarations not in it are removed (except what GET /api/manifest/preserved lists), the rest created or replaced. MCP servers declared anew or changed are listed after the write (an unchanged one keeps its tools). A refused document writes nothing.",
    area: "manifest",
    auth: { tag: "manifest", admin: true },
    stores: [
      { kind: "url", at: "tools[].url" },
      { kind: "url", at: "agents[].config.url" },
      { kind: "url", at: "agents[].config.base_url" },
      { kind: "url", at: "mcp[].config.url" },
      { kind: "url", at: "api_tools[].url" },
    ],
    body: ManifestDocument,
    response: ReplaceResult,
    errors: [409],
  },
  async (c, { body }) => {
    const ctx = createTargetContext(c.env, c.get("settings"));
    const plan = await planReplace(c.env.DB, body, c.get("settings"), c.env, new Date().toISOString());
    await applyReplace(c.env.DB, plan);
    const relist = new Set(plan.relist);
    const status = await reloadServers(
      ctx,
      (await listMcpServers(c.env.DB)).filter((s) => relist.has(s.title)),
    );
    return {
      replaced: true as const,
      counts: { tools: plan.doc.tools.length, agents: plan.doc.agents.length, mcp: plan.doc.mcp.length, api_tools: plan.doc.api_tools.length },
      removed: plan.removed,
      mcp_status: status,
    };
  },
);
