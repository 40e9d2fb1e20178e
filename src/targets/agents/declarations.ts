/** Agents declared in D1 (decisions §4): `POST /api/agents-config/entries`. */
import { z } from "zod";
import { assertConnectionsLendable, assertConnectorStoreFor, sentTo } from "../../connectors/references";
import type { ProviderDescriptor } from "../../platform/settings/connector-settings";
import type { EnvVars } from "../../platform/env";
import { HttpError, conflict } from "../../platform/http/errors";
import type { Settings } from "../../platform/settings/settings";
import { type Statement, all, d1, exists, first, run, trusted } from "../../platform/persistence/d1";
import { parseStored, validStored } from "../../platform/persistence/stored-json";
import { type EnvRef, assertReferencesMayGo, envRefSchema, headerConnections, headerReferences, headersSchema, redactHeaders } from "../../outbound/env-refs";
import { toolNameSchema } from "../../shared/tool-names";
import { targetNameSchema } from "../../shared/target-names";
import { assertDeclaredUrl, endpointUrlSchema } from "../../outbound/urls";
import { must } from "../../platform/must";

/** Names of built-in agents: never declared, never removed. */
export const BUILTIN_AGENT_NAMES: ReadonlySet<string> = new Set(["echo"]);

export const llmConfigSchema = z
  .object({
    /** OpenAI-compatible base, e.g. https://api.openai.com/v1 (we POST {base_url}/chat/completions). */
    base_url: endpointUrlSchema,
    model: z.string().min(1).max(256),
    /** Sent as `Authorization: Bearer …`; only an env reference, so no key is ever stored. */
    api_key: envRefSchema.optional(),
    system_prompt: z.string().max(100_000).optional(),
    /** Registry names, MCP tools (`<server>.<tool>`) included: those are offered to the model under an alias (function-names.ts). */
    tool_names: z.array(toolNameSchema).max(128).default([]),
    max_steps: z.number().int().min(1).max(64).default(8),
    /** Deadline of one chat-completions call. */
    timeout_seconds: z.number().positive().max(300).default(60),
    /** Most stored messages replayed to the model per call. */
    memory_window: z.number().int().min(1).max(1000).default(100),
    temperature: z.number().min(0).max(2).optional(),
  })
  .strict();
export type LlmConfig = z.infer<typeof llmConfigSchema>;

export const httpAgentConfigSchema = z
  .object({
    url: endpointUrlSchema,
    headers: headersSchema.default({}),
    timeout_seconds: z.number().positive().max(300).default(30),
  })
  .strict();
export type HttpAgentConfig = z.infer<typeof httpAgentConfigSchema>;

const common = { title: targetNameSchema, description: z.string().max(4096).default("") };

/** The declaration body, discriminated by `kind`. */
export const agentDeclarationSchema = z.discriminatedUnion("kind", [
  z.object({ ...common, kind: z.literal("llm"), config: llmConfigSchema }).strict(),
  z.object({ ...common, kind: z.literal("http"), config: httpAgentConfigSchema }).strict(),
]);
export type AgentDeclaration = z.infer<typeof agentDeclarationSchema>;

export type DeclaredAgent = AgentDeclaration & { created_at: string; updated_at: string };

/**
 * The checks a declaration needs the settings for (so not in the schema, which also reads
 * stored rows): the outbound address guard on `config.base_url` / `config.url` and the
 * secret-reference scope of `config.api_key` and every `{"env"}` header, and the connector store a
 * `{"connection"}` header needs (the connection's existence is checked by upsertDeclaredAgent).
 * Each refusal is a 400 naming the field, never the URL or variable.
 */
export function checkAgentDeclaration(d: AgentDeclaration, settings: Settings, env: EnvVars): void {
  let refs: Array<{ field: string; ref: EnvRef }>;
  let url: string;
  if (d.kind === "llm") {
    url = d.config.base_url;
    assertDeclaredUrl("config.base_url", url, settings);
    refs = d.config.api_key ? [{ field: "config.api_key", ref: d.config.api_key }] : [];
  } else {
    url = d.config.url;
    assertDeclaredUrl("config.url", url, settings);
    refs = headerReferences(d.config.headers, "config.headers");
  }
  assertReferencesMayGo(refs, url, settings, env);
  if (d.kind === "http") assertConnectorStoreFor(headerConnections(d.config.headers, "config.headers"), settings);
}

/** A declaration as reads show it: env references as-is, literal header values redacted. */
export const agentViewSchema = z.object({
  title: z.string(),
  kind: z.enum(["llm", "http"]),
  description: z.string(),
  config: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  updated_at: z.string(),
});

export function agentView(a: DeclaredAgent): z.infer<typeof agentViewSchema> {
  const config: Record<string, unknown> = a.kind === "http" ? { ...a.config, headers: redactHeaders(a.config.headers) } : { ...a.config };
  return { title: a.title, kind: a.kind, description: a.description, config, created_at: a.created_at, updated_at: a.updated_at };
}

const Row = z.object({ title: z.string(), kind: z.string(), description: z.string(), config: z.string(), created_at: z.string(), updated_at: z.string() });
type Row = z.infer<typeof Row>;

function toAgent(r: Row): DeclaredAgent {
  // The config is JSON text; the declaration it belongs to is validated whole, kind included.
  const config = parseStored(z.unknown(), r.config, "agent_declarations row");
  const declared = validStored(agentDeclarationSchema, { title: r.title, kind: r.kind, description: r.description, config }, "agent_declarations row");
  return { ...declared, created_at: r.created_at, updated_at: r.updated_at };
}

const COLUMNS = trusted("title, kind, description, config, created_at, updated_at");

export async function getDeclaredAgent(db: D1Database, title: string): Promise<DeclaredAgent | null> {
  const r = await first(Row, d1(db)`SELECT ${COLUMNS} FROM agent_declarations WHERE title = ${title}`);
  return r ? toAgent(r) : null;
}

export async function listDeclaredAgents(db: D1Database): Promise<DeclaredAgent[]> {
  return (await all(Row, d1(db)`SELECT ${COLUMNS} FROM agent_declarations ORDER BY title`)).map(toAgent);
}

/**
 * The create-or-replace of a declaration's row as a statement, answering the row (`RETURNING`); a
 * replaced row keeps its `created_at`. The declaration door stamps both with the current time; a backup import
 * batches it with the times its document carries.
 */
export function upsertAgentStatement(db: D1Database, d: AgentDeclaration, createdAt: string, updatedAt: string): D1PreparedStatement {
  return upsertAgentWrite(db, d, createdAt, updatedAt).prepared();
}

function upsertAgentWrite(db: D1Database, d: AgentDeclaration, createdAt: string, updatedAt: string): Statement {
  return d1(db)`INSERT INTO agent_declarations (title, kind, description, config, created_at, updated_at)
       VALUES (${d.title}, ${d.kind}, ${d.description}, ${JSON.stringify(d.config)}, ${createdAt}, ${updatedAt})
       ON CONFLICT(title) DO UPDATE SET kind = excluded.kind, description = excluded.description, config = excluded.config, updated_at = excluded.updated_at
       RETURNING ${COLUMNS}`;
}

/**
 * Creates or replaces a declaration; a built-in agent's name is 409, a `{"connection"}` header naming
 * no connection, or one whose provider does not lend its tokens to `config.url`'s origin, 400.
 */
export async function upsertDeclaredAgent(
  db: D1Database,
  d: AgentDeclaration,
  nowIso: string,
  providers: readonly ProviderDescriptor[],
): Promise<{ created: boolean; agent: DeclaredAgent }> {
  if (BUILTIN_AGENT_NAMES.has(d.title)) throw conflict("title is the name of a built-in agent");
  if (d.kind === "http") await assertConnectionsLendable(db, providers, sentTo(headerConnections(d.config.headers, "config.headers"), d.config.url));
  const existed = await exists(d1(db)`SELECT 1 AS one FROM agent_declarations WHERE title = ${d.title}`);
  const row = await first(Row, upsertAgentWrite(db, d, nowIso, nowIso));
  return { created: !existed, agent: toAgent(must(row, "the agent declaration just written")) };
}

/** Removes a declaration; a built-in agent is 409, an unknown title 404. */
export async function deleteDeclaredAgent(db: D1Database, title: string): Promise<void> {
  if (BUILTIN_AGENT_NAMES.has(title)) throw conflict("built-in agents cannot be removed");
  const meta = await run(d1(db)`DELETE FROM agent_declarations WHERE title = ${title}`);
  if ((meta.changes ?? 0) === 0) throw new HttpError(404, "agent declaration not found");
}
