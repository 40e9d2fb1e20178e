/**
 * API tools (docs/manifest.md "API tools"): HTTP tools made from one OpenAPI operation by
 * `POST /api/api-tools` (src/manifest/openapi-import.ts) and listed in the manifest's `api_tools`.
 * Unlike a declared HTTP tool, which POSTs its kwargs as one JSON body, an API tool speaks the
 * operation's own shape: any of GET, POST, PUT, PATCH, DELETE, path parameters substituted into the
 * URL, query and header parameters, and a JSON request body taken from the `body` kwarg.
 *
 * Deliberate deviation: the reference's `api_tools` block chooses which *operator* operations are
 * projected as MCP tools; here the door makes an operation a tool instead (docs/manifest.md).
 */
import { z } from "zod";
import { assertConnectionsLendable, assertConnectorStoreFor, sentTo } from "../../connectors/references";
import type { ProviderDescriptor } from "../../platform/settings/connector-settings";
import type { EnvVars } from "../../platform/env";
import { HttpError, conflict } from "../../platform/http/errors";
import type { Settings } from "../../platform/settings/settings";
import { type Statement, all, d1, exists, first, run, sql, trusted } from "../../platform/persistence/d1";
import { parseStored, validStored } from "../../platform/persistence/stored-json";
import { assertReferencesMayGo, headerConnections, headerReferences, headersSchema, redactHeaders } from "../../outbound/env-refs";
import { type JsonSchema, inputSchemaSchema } from "../../platform/json-schema";
import { targetNameSchema } from "../../shared/target-names";
import { urlOrigin } from "../../outbound/origin-lock";
import { assertDeclaredUrl, endpointUrlSchema } from "../../outbound/urls";
import { isBuiltinTool } from "./builtins";

export const API_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export const PARAMETER_LOCATIONS = ["path", "query", "header"] as const;
export const MAX_API_TOOL_TIMEOUT_SECONDS = 300;

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
/** `{name}` placeholders of a URL template. */
const PLACEHOLDER = /\{([^{}/]{1,128})\}/g;

export const ApiParameter = z
  .object({
    name: z.string().min(1).max(128),
    in: z.enum(PARAMETER_LOCATIONS),
    required: z.boolean().default(false),
  })
  .strict();
export type ApiParameter = z.infer<typeof ApiParameter>;

/** The placeholders of `url` (pure). */
export function placeholdersOf(url: string): string[] {
  return [...url.matchAll(PLACEHOLDER)].map((m) => m[1]);
}

/** `url` with every placeholder filled by `fill` (already encoded). */
export function fillTemplate(url: string, fill: (name: string) => string): string {
  return url.replace(PLACEHOLDER, (_, name: string) => fill(name));
}

/** An API tool's declaration: what the manifest lists and `POST /api/api-tools` writes. */
export const ApiToolDeclaration = z
  .object({
    title: targetNameSchema,
    description: z.string().max(4096).default(""),
    method: z.enum(API_METHODS),
    /** The operation's absolute URL: the server URL and the path, `{name}` for each path parameter. */
    url: z.string().max(2048),
    parameters: z.array(ApiParameter).max(100).default([]),
    /** `json`: the `body` kwarg is sent as the JSON request body. */
    body: z.enum(["none", "json"]).default("none"),
    headers: headersSchema.default({}),
    input_schema: inputSchemaSchema,
    timeout_seconds: z.number().positive().max(MAX_API_TOOL_TIMEOUT_SECONDS).default(30),
    /** The OpenAPI operationId it was made from (informational). */
    operation_id: z.string().max(256).nullable().default(null),
  })
  .strict()
  .superRefine((d, ctx) => {
    if (!endpointUrlSchema.safeParse(fillTemplate(d.url, () => "x")).success) {
      ctx.addIssue({
        code: "custom",
        path: ["url"],
        message: "must be an absolute http(s) URL with a host and no user:password, {name} placeholders in its path",
      });
      return;
    }
    // A placeholder that reaches the scheme, host or port would let whoever runs the tool choose
    // where its headers (stored literals, env secrets, connection tokens) are sent.
    if (urlOrigin(fillTemplate(d.url, () => "a")) !== urlOrigin(fillTemplate(d.url, () => "b"))) {
      ctx.addIssue({ code: "custom", path: ["url"], message: "{name} placeholders may only stand in the path or query, never in the scheme, host or port" });
      return;
    }
    const holes = placeholdersOf(d.url);
    const names = new Set<string>();
    d.parameters.forEach((p, i) => {
      if (names.has(p.name))
        ctx.addIssue({ code: "custom", path: ["parameters", i, "name"], message: "repeats another parameter's name (kwargs are keyed by name)" });
      names.add(p.name);
      if (p.in === "path" && !holes.includes(p.name))
        ctx.addIssue({ code: "custom", path: ["parameters", i], message: "a path parameter must have a {name} placeholder in url" });
      if (p.in === "path" && !p.required) ctx.addIssue({ code: "custom", path: ["parameters", i, "required"], message: "a path parameter is required" });
      if (p.in === "header" && !HEADER_NAME.test(p.name)) ctx.addIssue({ code: "custom", path: ["parameters", i, "name"], message: "not a valid header name" });
    });
    for (const hole of holes) {
      if (!d.parameters.some((p) => p.in === "path" && p.name === hole))
        ctx.addIssue({ code: "custom", path: ["url"], message: "every {name} placeholder needs a path parameter of that name" });
    }
    if (d.body === "json" && names.has("body"))
      ctx.addIssue({ code: "custom", path: ["parameters"], message: "a parameter named body clashes with the request body's kwarg" });
    if ((d.method === "GET" || d.method === "DELETE") && d.body === "json")
      ctx.addIssue({ code: "custom", path: ["body"], message: "GET and DELETE send no request body" });
  });
export type ApiToolDeclaration = z.infer<typeof ApiToolDeclaration>;

/** The origin an API tool sends to: its URL's, whatever the path parameters are (they never reach it). */
export function apiToolOrigin(url: string): string | null {
  return urlOrigin(fillTemplate(url, () => "x"));
}

/** A declaration as the dispatcher uses it. */
export type ApiTool = ApiToolDeclaration & { input_schema: JsonSchema; created_at: string; updated_at: string };

/** The settings-bound checks: the address guard on the URL, the env-reference scope, the connector store. */
export function checkApiToolDeclaration(d: ApiToolDeclaration, settings: Settings, env: EnvVars, field = ""): void {
  const url = fillTemplate(d.url, () => "x");
  assertDeclaredUrl(`${field}url`, url, settings);
  assertReferencesMayGo(headerReferences(d.headers, `${field}headers`), url, settings, env);
  assertConnectorStoreFor(headerConnections(d.headers, `${field}headers`), settings);
}

export const ApiToolView = z.object({
  title: z.string(),
  description: z.string(),
  method: z.enum(API_METHODS),
  url: z.string(),
  parameters: z.array(z.object({ name: z.string(), in: z.enum(PARAMETER_LOCATIONS), required: z.boolean() })),
  body: z.enum(["none", "json"]),
  headers: z.record(z.string(), z.union([z.string(), z.object({ env: z.string() }), z.object({ connection: z.string(), format: z.string().optional() })])),
  input_schema: z.record(z.string(), z.unknown()),
  timeout_seconds: z.number(),
  operation_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ApiToolView = z.infer<typeof ApiToolView>;

export function apiToolView(t: ApiTool): ApiToolView {
  return { ...t, headers: redactHeaders(t.headers) };
}

const Row = z.object({ title: z.string(), description: z.string(), spec: z.string(), created_at: z.string(), updated_at: z.string() });
type Row = z.infer<typeof Row>;
const COLUMNS = trusted("title, description, spec, created_at, updated_at");

export function toApiTool(r: Row): ApiTool {
  const spec = parseStored(z.record(z.string(), z.unknown()), r.spec, "api_tools row");
  const d = validStored(ApiToolDeclaration, { ...spec, title: r.title, description: r.description }, "api_tools row");
  return { ...d, created_at: r.created_at, updated_at: r.updated_at };
}

function specOf(d: ApiToolDeclaration): string {
  const { title: _t, description: _d, ...spec } = d;
  return JSON.stringify(spec);
}

export async function getApiTool(db: D1Database, title: string): Promise<ApiTool | null> {
  const r = await first(Row, d1(db)`SELECT ${COLUMNS} FROM api_tools WHERE title = ${title}`);
  return r ? toApiTool(r) : null;
}

export async function listApiTools(db: D1Database): Promise<ApiTool[]> {
  return (await all(Row, d1(db)`SELECT ${COLUMNS} FROM api_tools ORDER BY title`)).map(toApiTool);
}

/**
 * The create-or-replace statement. With `guard`, it writes nothing while an HTTP tool or a preset
 * holds the title (the check sits in the write, so a concurrent declaration cannot slip between).
 */
export function upsertApiToolStatement(db: D1Database, d: ApiToolDeclaration, createdAt: string, updatedAt: string, guard: boolean): D1PreparedStatement {
  return upsertStatement(db, d, createdAt, updatedAt, guard).prepared();
}

function upsertStatement(db: D1Database, d: ApiToolDeclaration, createdAt: string, updatedAt: string, guard: boolean): Statement {
  const where = guard
    ? sql`NOT EXISTS (SELECT 1 FROM presets WHERE name = ${d.title}) AND NOT EXISTS (SELECT 1 FROM tool_declarations WHERE title = ${d.title})`
    : sql`true`;
  return d1(db)`INSERT INTO api_tools (title, description, spec, created_at, updated_at)
       SELECT ${d.title}, ${d.description}, ${specOf(d)}, ${createdAt}, ${updatedAt} WHERE ${where}
       ON CONFLICT(title) DO UPDATE SET description = excluded.description, spec = excluded.spec, updated_at = excluded.updated_at
       RETURNING ${COLUMNS}`;
}

/** Creates or replaces an API tool; a built-in's, an HTTP tool's or a preset's name is 409. */
export async function upsertApiTool(
  db: D1Database,
  d: ApiToolDeclaration,
  nowIso: string,
  providers: readonly ProviderDescriptor[],
): Promise<{ created: boolean; tool: ApiTool }> {
  if (isBuiltinTool(d.title)) throw conflict("title is the name of a built-in tool");
  await assertConnectionsLendable(
    db,
    providers,
    sentTo(
      headerConnections(d.headers, "headers"),
      fillTemplate(d.url, () => "x"),
    ),
  );
  const existed = await exists(d1(db)`SELECT 1 AS one FROM api_tools WHERE title = ${d.title}`);
  const row = await first(Row, upsertStatement(db, d, nowIso, nowIso, true));
  if (!row) throw conflict("title is the name of an HTTP tool or a preset");
  return { created: !existed, tool: toApiTool(row) };
}

export async function deleteApiTool(db: D1Database, title: string): Promise<void> {
  const res = await run(d1(db)`DELETE FROM api_tools WHERE title = ${title}`);
  if (res.changes === 0) throw new HttpError(404, "api tool not found");
}
