/** HTTP tools declared in D1 (decisions §4): `POST /api/tools-config/entries`. */
import { z } from "zod";
import { assertConnectionsLendable, assertConnectorStoreFor, sentTo } from "../../connectors/references";
import type { ProviderDescriptor } from "../../platform/settings/connector-settings";
import type { EnvVars } from "../../platform/env";
import { HttpError, conflict } from "../../platform/http/errors";
import { type Statement, all, d1, exists, first, run, sql, trusted } from "../../platform/persistence/d1";
import { parseStored } from "../../platform/persistence/stored-json";
import type { Settings } from "../../platform/settings/settings";
import { assertReferencesMayGo, headerConnections, headerReferences, headersSchema, redactHeaders } from "../../outbound/env-refs";
import { type JsonSchema, inputSchemaSchema } from "../../platform/json-schema";
import { targetNameSchema } from "../../shared/target-names";
import { assertDeclaredUrl, endpointUrlSchema } from "../../outbound/urls";
import { isBuiltinTool } from "./builtins";

/** Upper bound on a tool's own deadline (seconds). */
export const MAX_TOOL_TIMEOUT_SECONDS = 300;
export const DEFAULT_TOOL_TIMEOUT_SECONDS = 30;

/** The declaration body. */
export const httpToolDeclarationSchema = z
  .object({
    title: targetNameSchema,
    kind: z.literal("http"),
    description: z.string().max(4096).default(""),
    url: endpointUrlSchema,
    method: z.enum(["POST", "PUT", "PATCH"]).default("POST"),
    headers: headersSchema.default({}),
    input_schema: inputSchemaSchema.optional(),
    timeout_seconds: z.number().positive().max(MAX_TOOL_TIMEOUT_SECONDS).default(DEFAULT_TOOL_TIMEOUT_SECONDS),
  })
  .strict();
export type HttpToolDeclaration = z.infer<typeof httpToolDeclarationSchema>;

/**
 * The checks a declaration needs the settings for (so not in the schema, which also reads
 * stored rows): the outbound address guard on `url`, the secret-reference scope of every
 * `{"env"}` header, and the connector store a `{"connection"}` header needs (that the connection
 * exists is checked by upsertHttpTool, which reads D1). Each refusal is a 400 naming the field,
 * never the URL or variable.
 */
export function checkHttpToolDeclaration(d: HttpToolDeclaration, settings: Settings, env: EnvVars): void {
  assertDeclaredUrl("url", d.url, settings);
  assertReferencesMayGo(headerReferences(d.headers, "headers"), d.url, settings, env);
  assertConnectorStoreFor(headerConnections(d.headers, "headers"), settings);
}

/** What a row's `spec` column holds. */
const storedSpecSchema = z.object({
  url: z.string(),
  method: z.enum(["POST", "PUT", "PATCH"]),
  headers: headersSchema,
  input_schema: z.record(z.string(), z.unknown()).nullable(),
  timeout_seconds: z.number(),
});

/** A declared HTTP tool as the dispatcher uses it (headers still unresolved references). */
export interface HttpTool {
  title: string;
  description: string;
  url: string;
  method: "POST" | "PUT" | "PATCH";
  headers: z.infer<typeof headersSchema>;
  input_schema: JsonSchema | null;
  timeout_seconds: number;
  created_at: string;
  updated_at: string;
}

/** A declaration as reads show it: literal header values redacted, env references as-is. */
export const httpToolViewSchema = z.object({
  title: z.string(),
  kind: z.literal("http"),
  description: z.string(),
  url: z.string(),
  method: z.string(),
  headers: z.record(z.string(), z.union([z.string(), z.object({ env: z.string() }), z.object({ connection: z.string(), format: z.string().optional() })])),
  input_schema: z.record(z.string(), z.unknown()).nullable(),
  timeout_seconds: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});

export function httpToolView(t: HttpTool): z.infer<typeof httpToolViewSchema> {
  return {
    title: t.title,
    kind: "http",
    description: t.description,
    url: t.url,
    method: t.method,
    headers: redactHeaders(t.headers),
    input_schema: t.input_schema,
    timeout_seconds: t.timeout_seconds,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

/** A declared tool's row (`tool_declarations`, and `api_tools` has the same columns). */
export const DeclaredToolRow = z.object({ title: z.string(), description: z.string(), spec: z.string(), created_at: z.string(), updated_at: z.string() });
type Row = z.infer<typeof DeclaredToolRow>;

/** Parses a stored row; an unreadable row is corrupt storage, a 500. */
export function toHttpTool(r: Row): HttpTool {
  const spec = parseStored(storedSpecSchema, r.spec, "tool_declarations row");
  return { title: r.title, description: r.description, ...spec, created_at: r.created_at, updated_at: r.updated_at };
}

const COLUMNS = trusted("title, description, spec, created_at, updated_at");

export async function getHttpTool(db: D1Database, title: string): Promise<HttpTool | null> {
  const r = await first(DeclaredToolRow, d1(db)`SELECT ${COLUMNS} FROM tool_declarations WHERE title = ${title}`);
  return r ? toHttpTool(r) : null;
}

export async function listHttpTools(db: D1Database): Promise<HttpTool[]> {
  return (await all(DeclaredToolRow, d1(db)`SELECT ${COLUMNS} FROM tool_declarations ORDER BY title`)).map(toHttpTool);
}

/** The `spec` column of a declaration's row: all of it but the title, kind and description. */
export function httpToolSpec(d: HttpToolDeclaration): string {
  return JSON.stringify({
    url: d.url,
    method: d.method,
    headers: d.headers,
    input_schema: d.input_schema ?? null,
    timeout_seconds: d.timeout_seconds,
  });
}

/**
 * The create-or-replace of a declaration's row as a statement, answering the row (`RETURNING`). A
 * replaced row keeps its `created_at`. With `refusePresetName` the statement writes nothing (and
 * answers no row) while a preset has the title: the declaration door's check, in the write so a
 * concurrent preset create cannot slip in between. A backup import passes false on purpose: it
 * checked the title against the deployment's and the import's presets when it validated, and it
 * writes its rows in one batch without reading each answer, so a row the guard skipped would be
 * lost without a word.
 */
export function upsertHttpToolStatement(
  db: D1Database,
  d: HttpToolDeclaration,
  createdAt: string,
  updatedAt: string,
  { refusePresetName }: { refusePresetName: boolean },
): D1PreparedStatement {
  return upsertHttpToolWrite(db, d, createdAt, updatedAt, { refusePresetName }).prepared();
}

function upsertHttpToolWrite(
  db: D1Database,
  d: HttpToolDeclaration,
  createdAt: string,
  updatedAt: string,
  { refusePresetName }: { refusePresetName: boolean },
): Statement {
  // `WHERE true` keeps the SELECT's WHERE clause present, which SQLite needs before ON CONFLICT.
  const guard = refusePresetName ? sql`NOT EXISTS (SELECT 1 FROM presets WHERE name = ${d.title})` : sql`true`;
  return d1(db)`INSERT INTO tool_declarations (title, kind, description, spec, created_at, updated_at)
       SELECT ${d.title}, 'http', ${d.description}, ${httpToolSpec(d)}, ${createdAt}, ${updatedAt} WHERE ${guard}
       ON CONFLICT(title) DO UPDATE SET kind = excluded.kind, description = excluded.description, spec = excluded.spec, updated_at = excluded.updated_at
       RETURNING ${COLUMNS}`;
}

/**
 * Creates or replaces a declaration. A built-in's name is refused (409); so is a preset's, and
 * that check sits in the same statement as the write so a concurrent preset create cannot slip
 * between them. A `{"connection"}` header must name an existing connection whose provider lends
 * its tokens to `url`'s origin (400).
 */
export async function upsertHttpTool(
  db: D1Database,
  d: HttpToolDeclaration,
  nowIso: string,
  providers: readonly ProviderDescriptor[],
): Promise<{ created: boolean; tool: HttpTool }> {
  if (isBuiltinTool(d.title)) throw conflict("title is the name of a built-in tool");
  await assertConnectionsLendable(db, providers, sentTo(headerConnections(d.headers, "headers"), d.url));
  const existed = await exists(d1(db)`SELECT 1 AS one FROM tool_declarations WHERE title = ${d.title}`);
  const row = await first(DeclaredToolRow, upsertHttpToolWrite(db, d, nowIso, nowIso, { refusePresetName: true }));
  if (!row) throw conflict("title is the name of a preset");
  return { created: !existed, tool: toHttpTool(row) };
}

/** Removes a declaration; a built-in is 409, an unknown title 404. */
export async function deleteHttpTool(db: D1Database, title: string): Promise<void> {
  if (isBuiltinTool(title)) throw conflict("built-in tools cannot be removed");
  const meta = await run(d1(db)`DELETE FROM tool_declarations WHERE title = ${title}`);
  if ((meta.changes ?? 0) === 0) throw new HttpError(404, "tool declaration not found");
}
