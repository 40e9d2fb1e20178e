/**
 * MCP config doors (docs/mcp.md): declare remote MCP servers (Streamable HTTP) whose
 * tools join the registry as `<server>.<tool>`, replace the whole MCP config, read its JSON
 * Schema, and store secret values their headers reference. Tagged `manifest`; the writes are
 * admin-only, because a declaration sends headers (env secrets, connection tokens) to its URL.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import { DeclaredServer, McpConfigDocument, declareServer, replaceMcpConfig } from "../config";
import { McpServerDeclaration, McpServerView, mcpTitleSchema } from "../declarations";
import { McpStatusView } from "../listing";
import { MAX_SECRET_ENV_ORIGINS, writeSecretEnv } from "../secret-env";
import { deleteMcpServer } from "../store";
import { ENV_NAME } from "../../platform/settings/secret-references";
import { createTargetContext } from "../../targets/dispatch";
import { endpointUrlSchema } from "../../outbound/urls";

export const mcpConfigRouter = new Hono<AppEnv>();

const ADMIN_WRITE = { tag: "manifest", admin: true } as const;

addRoute(
  mcpConfigRouter,
  {
    method: "post",
    path: "/api/mcp-config/entries",
    summary: "Declare (create or replace) an MCP server (admin)",
    description:
      '`{title, description?, config: {type: "http", url, headers?}, include?, exclude?, timeout_seconds?}`. The server speaks Streamable HTTP; header values are literals (never shown again: reads say "<redacted>"), {"env": "VAR"} references (SECRET_* or SECRET_REFERENCE_ALLOWLIST; resolved from POST /api/mcp-config/secret-env values first, then the Worker env) or {"connection": id} references. `url` passes the outbound address guard. The declaration is stored, then the server is listed at once: its tools register as `<title>.<tool>` and the answer carries the listing\'s status (a server that cannot be listed stays declared with status `failed`; reload it later).',
    area: "manifest",
    auth: ADMIN_WRITE,
    stores: [{ kind: "url", at: "config.url" }],
    body: McpServerDeclaration,
    response: DeclaredServer,
  },
  (c, { body }) => declareServer(createTargetContext(c.env, c.get("settings")), body),
);

addRoute(
  mcpConfigRouter,
  {
    method: "delete",
    path: "/api/mcp-config/entries/{title}",
    summary: "Remove an MCP server and its tools (admin)",
    description: "Unknown title 404. Routes, presets and agents naming its tools fail at dispatch until re-pointed.",
    area: "manifest",
    auth: ADMIN_WRITE,
    params: z.object({ title: mcpTitleSchema }),
    response: z.object({ removed: z.literal(true), title: z.string() }),
    errors: [404],
  },
  async (c, { params }) => {
    await deleteMcpServer(c.env.DB, params.title);
    return { removed: true as const, title: params.title };
  },
);

addRoute(
  mcpConfigRouter,
  {
    method: "post",
    path: "/api/mcp-config",
    summary: "Replace the whole MCP config (admin)",
    description:
      "`{mcp: [entry, ...]}` (each entry as POST /api/mcp-config/entries). In one batch the declared servers become exactly these: others are removed with their tools, each listed one is re-declared; then every server is listed. A refused document writes nothing.",
    area: "manifest",
    auth: ADMIN_WRITE,
    stores: [{ kind: "url", at: "mcp[].config.url" }],
    body: McpConfigDocument,
    response: z.object({ servers: z.array(McpServerView), status: z.array(McpStatusView), removed: z.array(z.string()) }),
  },
  (c, { body }) => replaceMcpConfig(createTargetContext(c.env, c.get("settings")), body),
);

/** The schema door's answer, computed once: it never changes within a build. */
let configSchema: Record<string, unknown> | null = null;

addRoute(
  mcpConfigRouter,
  {
    method: "get",
    path: "/api/mcp-config/schema",
    summary: "The JSON Schema of the MCP config",
    description:
      "`{config, entry}`: the JSON Schemas (draft 2020-12) of the POST /api/mcp-config body and of one entry (the POST /api/mcp-config/entries body).",
    area: "manifest",
    auth: { tag: "manifest" },
    response: z.object({ config: z.record(z.string(), z.unknown()), entry: z.record(z.string(), z.unknown()) }),
  },
  () => {
    configSchema ??= {
      config: z.toJSONSchema(McpConfigDocument, { target: "draft-2020-12", io: "input", unrepresentable: "any" }),
      entry: z.toJSONSchema(McpServerDeclaration, { target: "draft-2020-12", io: "input", unrepresentable: "any" }),
    };
    return configSchema;
  },
);

addRoute(
  mcpConfigRouter,
  {
    method: "post",
    path: "/api/mcp-config/secret-env",
    summary: "Store (or remove) a secret value MCP servers' env references resolve to (admin)",
    description:
      '`{name, value, origins?}`: `name` must be inside the secret-reference scope (SECRET_* or SECRET_REFERENCE_ALLOWLIST); `value` is sealed with SETTINGS_ENCRYPTION_KEY (501 settings-encryption-not-configured without it) and never shown again; `value: null` removes it. The value is bound to the origins it may be sent to: those of `origins` (server URLs) and of the MCP servers referencing `name` now (400 naming `origins` when there are none), all within the origins SECRET_REFERENCE_ORIGINS binds `name` to (400 naming `name` when it binds none, `origins[i]` for one outside); a server at another origin does not get it until the value is written again. An MCP server\'s {"env": name} header resolves the stored value first, then the Worker env. Answers `{name, set, updated_at}`.',
    area: "manifest",
    auth: ADMIN_WRITE,
    body: z
      .object({
        name: z.string().regex(ENV_NAME, { message: "must name an env var (letters, digits, _)" }),
        value: z
          .string()
          .min(1)
          .max(8192)
          .refine((v) => !/[\r\n\0]/.test(v), { message: "must not contain CR, LF or NUL" })
          .nullable(),
        /** Server URLs (or origins) the value may be sent to, besides the servers referencing it now. */
        origins: z.array(endpointUrlSchema).max(MAX_SECRET_ENV_ORIGINS).default([]),
      })
      .strict(),
    response: z.object({ name: z.string(), set: z.boolean(), updated_at: z.string() }),
  },
  (c, { body }) => writeSecretEnv(c.env.DB, c.get("settings"), c.env, body.name, body.value, new Date().toISOString(), body.origins),
);
