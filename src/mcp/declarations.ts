/**
 * MCP server declarations (docs/mcp.md "Declaring a server"): the body of
 * `POST /api/mcp-config/entries`, one entry of `POST /api/mcp-config` and of the manifest's `mcp`
 * list. The shape follows the reference's manifest entries `{title, config: {type, url, headers},
 * include, exclude}`; this build speaks Streamable HTTP only (`type: "http"`), so the reference's
 * stdio fields (`command`, `args`, `env`, `uds`) are refused as unknown fields.
 */
import { z } from "zod";
import { assertConnectorStoreFor } from "../connectors/references";
import type { EnvVars } from "../platform/env";
import { RESERVED_SERVER_TITLES } from "../shared/tool-names";
import type { Settings } from "../platform/settings/settings";
import { assertReferencesMayGo, headerConnections, headerReferences, headersSchema, redactHeaders } from "../outbound/env-refs";
import { assertDeclaredUrl, endpointUrlSchema } from "../outbound/urls";

export const MAX_MCP_TIMEOUT_SECONDS = 300;
export const DEFAULT_MCP_TIMEOUT_SECONDS = 30;

/**
 * A server's title: the tool-name alphabet without a dot, short enough for `<title>.<tool>`, and
 * not a reserved one (the maintenance tools are named `maintenance.<pass>`).
 */
export const mcpTitleSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,62}$/, { message: "must be 1-62 characters of letters, digits, _ and -" })
  .refine((t) => !RESERVED_SERVER_TITLES.has(t.toLowerCase()), { message: "is reserved (the maintenance tools are named maintenance.<pass>)" });

const remoteToolList = z
  .array(z.string().min(1).max(128))
  .max(1000)
  .refine((l) => new Set(l).size === l.length, { message: "must not repeat a name" })
  .default([]);

export const McpServerConfig = z
  .object({
    type: z.literal("http"),
    url: endpointUrlSchema,
    headers: headersSchema.default({}),
  })
  .strict();
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** The declaration body. */
export const McpServerDeclaration = z
  .object({
    title: mcpTitleSchema,
    description: z.string().max(4096).default(""),
    config: McpServerConfig,
    /** The server's tool names to register; empty registers every tool. */
    include: remoteToolList,
    /** The server's tool names never registered (wins over include). */
    exclude: remoteToolList,
    /** Deadline of one tool call (connect, initialize and `tools/call`). */
    timeout_seconds: z.number().positive().max(MAX_MCP_TIMEOUT_SECONDS).default(DEFAULT_MCP_TIMEOUT_SECONDS),
  })
  .strict()
  .superRefine((d, ctx) => {
    const excluded = new Set(d.exclude);
    if (d.include.some((n) => excluded.has(n))) ctx.addIssue({ code: "custom", path: ["include"], message: "a name may not be both included and excluded" });
  });
export type McpServerDeclaration = z.infer<typeof McpServerDeclaration>;

/**
 * The checks a declaration needs the settings for: the outbound address guard on `config.url`,
 * the secret-reference scope of every `{"env"}` header and its binding to the server's origin
 * (`SECRET_REFERENCE_ORIGINS`, whether the value is then stored or in the env), the connector store a `{"connection"}`
 * header needs (its existence is checked by the store, which reads D1). 400s name the field only.
 */
export function checkMcpDeclaration(d: McpServerDeclaration, settings: Settings, env: EnvVars, field = ""): void {
  assertDeclaredUrl(`${field}config.url`, d.config.url, settings);
  assertReferencesMayGo(headerReferences(d.config.headers, `${field}config.headers`), d.config.url, settings, env);
  assertConnectorStoreFor(headerConnections(d.config.headers, `${field}config.headers`), settings);
}

/** A declaration as reads show it: literal header values redacted, references as declared. */
export const McpServerView = z.object({
  title: z.string(),
  description: z.string(),
  config: z.object({
    type: z.literal("http"),
    url: z.string(),
    headers: z.record(z.string(), z.union([z.string(), z.object({ env: z.string() }), z.object({ connection: z.string(), format: z.string().optional() })])),
  }),
  include: z.array(z.string()),
  exclude: z.array(z.string()),
  timeout_seconds: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type McpServerView = z.infer<typeof McpServerView>;

/** The declaration as stored (its `spec` column holds all but title and description). */
export const McpServerSpec = z.object({
  config: McpServerConfig,
  include: z.array(z.string()),
  exclude: z.array(z.string()),
  timeout_seconds: z.number(),
});
export type McpServerSpec = z.infer<typeof McpServerSpec>;

export function specOf(d: McpServerDeclaration): McpServerSpec {
  return { config: d.config, include: d.include, exclude: d.exclude, timeout_seconds: d.timeout_seconds };
}

/** The view of a stored server. */
export function mcpServerView(s: { title: string; description: string; spec: McpServerSpec; created_at: string; updated_at: string }): McpServerView {
  return {
    title: s.title,
    description: s.description,
    config: { type: "http", url: s.spec.config.url, headers: redactHeaders(s.spec.config.headers) },
    include: s.spec.include,
    exclude: s.spec.exclude,
    timeout_seconds: s.spec.timeout_seconds,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

/** Does the declaration let the server's tool `name` register? (pure) */
export function admitsTool(spec: Pick<McpServerSpec, "include" | "exclude">, name: string): boolean {
  if (spec.exclude.includes(name)) return false;
  return spec.include.length === 0 || spec.include.includes(name);
}
