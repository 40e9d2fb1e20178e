/**
 * The manifest (docs/manifest.md): every operator declaration as one document,
 * `{version: 1, tools, agents, mcp, api_tools, connectors}`, read whole and replaced whole.
 *
 * - `tools`: HTTP tools (the POST /api/tools-config/entries body), `agents` (the
 *   POST /api/agents-config/entries body), `mcp` (the POST /api/mcp-config/entries body),
 *   `api_tools` (API tool declarations, see src/targets/tools/api-tool-store.ts), each entry exactly the
 *   body its own door takes, validated by the same schema and the same settings-bound checks.
 * - `connectors`: the connector provider ids. They come from the CONNECTORS_PROVIDERS setting, so a
 *   replace keeps them: the list may be left out, and when given it must be the current one.
 * - Secrets appear as references only: `{"env"}` and `{"connection"}` as declared, a literal header
 *   value as "<redacted>". In a replace, "<redacted>" stands for the value stored for that header
 *   of the entry with that title, so a read document can be edited and sent back as it is; but only
 *   while the entry's URL keeps its origin (src/outbound/origin-lock.ts): a value is never carried
 *   to a host it was not entered for.
 *
 * A replace keeps what the manifest does not own (GET /api/manifest/preserved): declarations an
 * installed marketplace plugin owns, presets, built-ins, connectors and stored secret env values.
 * It validates the whole document first, then writes it in one D1 batch: all or nothing.
 */
import { z } from "zod";
import { assertConnectionsLendable, sentTo } from "../connectors/references";
import type { EnvVars } from "../platform/env";
import { all, d1 } from "../platform/persistence/d1";
import { HttpError, badRequest, conflict } from "../platform/http/errors";
import { mcpEntryChanged, replaceMcpStatements } from "../mcp/config";
import { McpServerDeclaration, checkMcpDeclaration } from "../mcp/declarations";
import { McpStatusView } from "../mcp/listing";
import { type McpServerRecord, listMcpServers } from "../mcp/store";
import { storedSecretEnvNames } from "../mcp/secret-env";
import type { Settings } from "../platform/settings/settings";
import {
  BUILTIN_AGENT_NAMES,
  type DeclaredAgent,
  agentDeclarationSchema,
  checkAgentDeclaration,
  listDeclaredAgents,
  upsertAgentStatement,
} from "../targets/agents/declarations";
import { type HeaderSpec, headerConnections, headerReferences, redactHeaders } from "../outbound/env-refs";
import { keepStoredLiterals, urlOrigin } from "../outbound/origin-lock";
import { BUILTIN_TOOLS, isBuiltinTool } from "../targets/tools/builtins";
import {
  type HttpTool,
  checkHttpToolDeclaration,
  httpToolDeclarationSchema,
  httpToolView,
  listHttpTools,
  upsertHttpToolStatement,
} from "../targets/tools/http-tools";
import {
  type ApiTool,
  ApiToolDeclaration,
  apiToolOrigin,
  checkApiToolDeclaration,
  listApiTools,
  upsertApiToolStatement,
} from "../targets/tools/api-tool-store";
import { must } from "../platform/must";

/** Most entries of one section (a replace writes them all in one batch). */
export const MAX_SECTION_ENTRIES = 200;

const section = <S extends z.ZodType>(entry: S) =>
  z
    .array(entry)
    .max(MAX_SECTION_ENTRIES)
    .default([])
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      (list as Array<{ title: string }>).forEach((e, i) => {
        if (seen.has(e.title)) ctx.addIssue({ code: "custom", path: [i, "title"], message: "repeats another entry's title" });
        seen.add(e.title);
      });
    });

/** The document `POST /api/manifest/replace` takes (and GET /api/manifest answers). */
export const ManifestDocument = z
  .object({
    version: z.literal(1).default(1),
    tools: section(httpToolDeclarationSchema),
    agents: section(agentDeclarationSchema),
    mcp: section(McpServerDeclaration),
    api_tools: section(ApiToolDeclaration),
    connectors: z.array(z.string().max(128)).max(100).optional(),
  })
  .strict();
export type ManifestDocument = z.infer<typeof ManifestDocument>;

const entries = z.array(z.record(z.string(), z.unknown()));

/** What GET /api/manifest answers: the same sections, secrets as references. */
export const ManifestView = z.object({
  version: z.literal(1),
  tools: entries,
  agents: entries,
  mcp: entries,
  api_tools: entries,
  connectors: z.array(z.string()),
});
export type ManifestView = z.infer<typeof ManifestView>;

const OwnedRow = z.object({ kind: z.string(), name: z.string() });
const NameRow = z.object({ name: z.string() });

/** Titles of the declarations installed plugins own (kept by a replace, not in the document). */
async function marketplaceOwned(db: D1Database): Promise<{ tools: Set<string>; agents: Set<string> }> {
  const results = await all(OwnedRow, d1(db)`SELECT kind, name FROM marketplace_owned WHERE kind IN ('http_tool', 'agent')`);
  return {
    tools: new Set(results.filter((r) => r.kind === "http_tool").map((r) => r.name)),
    agents: new Set(results.filter((r) => r.kind === "agent").map((r) => r.name)),
  };
}

/** The tool's view as its declaration door's body: no timestamps, and no input_schema when it has none. */
function httpToolEntry(t: HttpTool): Record<string, unknown> {
  const { created_at: _created, updated_at: _updated, input_schema, timeout_seconds, ...entry } = httpToolView(t);
  return { ...entry, ...(input_schema ? { input_schema } : {}), timeout_seconds };
}

function agentEntry(a: DeclaredAgent): Record<string, unknown> {
  const config = a.kind === "http" ? { ...a.config, headers: redactHeaders(a.config.headers) } : { ...a.config };
  return { title: a.title, kind: a.kind, description: a.description, config };
}

function mcpEntry(s: McpServerRecord): Record<string, unknown> {
  const spec = s.spec;
  return {
    title: s.title,
    description: s.description,
    config: { type: "http", url: spec.config.url, headers: redactHeaders(spec.config.headers) },
    include: spec.include,
    exclude: spec.exclude,
    timeout_seconds: spec.timeout_seconds,
  };
}

function apiToolEntry(t: ApiTool): Record<string, unknown> {
  const { created_at: _c, updated_at: _u, ...d } = t;
  return { ...d, headers: redactHeaders(t.headers) };
}

interface Current {
  tools: HttpTool[];
  agents: DeclaredAgent[];
  mcp: McpServerRecord[];
  apiTools: ApiTool[];
  owned: { tools: Set<string>; agents: Set<string> };
}

async function readCurrent(db: D1Database): Promise<Current> {
  const [tools, agents, mcp, apiTools, owned] = await Promise.all([
    listHttpTools(db),
    listDeclaredAgents(db),
    listMcpServers(db),
    listApiTools(db),
    marketplaceOwned(db),
  ]);
  return { tools, agents, mcp, apiTools, owned };
}

/** `GET /api/manifest`. */
export async function readManifest(db: D1Database, settings: Settings): Promise<ManifestView> {
  const cur = await readCurrent(db);
  return {
    version: 1,
    tools: cur.tools.filter((t) => !cur.owned.tools.has(t.title)).map(httpToolEntry),
    agents: cur.agents.filter((a) => !cur.owned.agents.has(a.title)).map(agentEntry),
    mcp: cur.mcp.map(mcpEntry),
    api_tools: cur.apiTools.map(apiToolEntry),
    connectors: settings.connectors.providers.map((p) => p.id),
  };
}

export const PreservedView = z.object({
  tools: z.array(z.string()),
  agents: z.array(z.string()),
  presets: z.array(z.string()),
  builtin_tools: z.array(z.string()),
  builtin_agents: z.array(z.string()),
  connectors: z.array(z.string()),
  secret_env: z.array(z.string()),
});
export type PreservedView = z.infer<typeof PreservedView>;

/** `GET /api/manifest/preserved`: what a replace keeps whatever the document says. */
export async function readPreserved(db: D1Database, settings: Settings): Promise<PreservedView> {
  const [owned, presets, secrets] = await Promise.all([
    marketplaceOwned(db),
    all(NameRow, d1(db)`SELECT name FROM presets ORDER BY name`),
    storedSecretEnvNames(db),
  ]);
  return {
    tools: [...owned.tools].sort(),
    agents: [...owned.agents].sort(),
    presets: presets.map((r) => r.name),
    builtin_tools: [...BUILTIN_TOOLS.keys()].sort(),
    builtin_agents: [...BUILTIN_AGENT_NAMES].sort(),
    connectors: settings.connectors.providers.map((p) => p.id),
    secret_env: [...secrets].sort(),
  };
}

export const EnvRefsView = z.object({
  items: z.array(z.object({ name: z.string(), referenced_by: z.array(z.string()), env_set: z.boolean(), secret_env_set: z.boolean() })),
  total: z.number().int(),
});
export type EnvRefsView = z.infer<typeof EnvRefsView>;

/**
 * `GET /api/manifest/mcp-env-refs`: every `{"env"}` reference of the manifest (MCP servers'
 * headers first among them, also HTTP and API tools' headers and agents' keys and headers), with
 * where each is referenced and whether a value is there: in the Worker env (`env_set`), or stored
 * by POST /api/mcp-config/secret-env (`secret_env_set`; only MCP servers' references read those).
 * Never a value.
 */
export async function readEnvRefs(db: D1Database, env: EnvVars): Promise<EnvRefsView> {
  const [cur, stored] = await Promise.all([readCurrent(db), storedSecretEnvNames(db)]);
  const found = [
    ...cur.mcp.flatMap((s) => headerReferences(s.spec.config.headers, `mcp.${s.title}.config.headers`)),
    ...cur.tools.flatMap((t) => headerReferences(t.headers, `tools.${t.title}.headers`)),
    ...cur.apiTools.flatMap((t) => headerReferences(t.headers, `api_tools.${t.title}.headers`)),
    ...cur.agents.flatMap((a) =>
      a.kind === "http"
        ? headerReferences(a.config.headers, `agents.${a.title}.config.headers`)
        : a.config.api_key
          ? [{ field: `agents.${a.title}.config.api_key`, ref: a.config.api_key }]
          : [],
    ),
  ];
  const refs = new Map<string, string[]>();
  for (const { field, ref } of found) {
    const fields = refs.get(ref.env);
    if (fields) fields.push(field);
    else refs.set(ref.env, [field]);
  }
  const items = [...refs.keys()].sort().map((name) => {
    const v = Reflect.get(env, name);
    return {
      name,
      referenced_by: must(refs.get(name), "the fields of a collected reference"),
      env_set: typeof v === "string" && v !== "",
      secret_env_set: stored.has(name),
    };
  });
  return { items, total: items.length };
}

/** Runs a door's own settings check, naming the entry in its 400. */
function checkEntry(field: string, check: () => void): void {
  try {
    check();
  } catch (err) {
    if (err instanceof HttpError && err.status === 400) throw badRequest(`${field}: ${err.message}`);
    throw err;
  }
}

export const ReplaceResult = z.object({
  replaced: z.literal(true),
  counts: z.object({ tools: z.number().int(), agents: z.number().int(), mcp: z.number().int(), api_tools: z.number().int() }),
  removed: z.object({ tools: z.array(z.string()), agents: z.array(z.string()), mcp: z.array(z.string()), api_tools: z.array(z.string()) }),
  /** The MCP servers the replace declared anew or changed, listed after the write. */
  mcp_status: z.array(McpStatusView),
});
export type ReplaceResult = z.infer<typeof ReplaceResult>;

/** The validated plan of a replace: the resolved document and the statements that write it. */
export interface ReplacePlan {
  doc: ManifestDocument;
  statements: D1PreparedStatement[];
  removed: ReplaceResult["removed"];
  /** Titles of MCP servers declared anew or changed (listed after the write). */
  relist: string[];
}

const titles = (list: Array<{ title: string }>) => JSON.stringify(list.map((e) => e.title));

/**
 * Validates the whole document against the deployment and builds its one batch. Nothing is
 * written here. Refusals: 400 (a field, naming it), 409 (a title a built-in, a preset or an
 * installed plugin holds).
 */
export async function planReplace(db: D1Database, input: ManifestDocument, settings: Settings, env: EnvVars, nowIso: string): Promise<ReplacePlan> {
  const cur = await readCurrent(db);
  if (input.connectors !== undefined) {
    const want = settings.connectors.providers.map((p) => p.id).sort();
    if (JSON.stringify([...input.connectors].sort()) !== JSON.stringify(want)) {
      throw badRequest(
        "invalid body: connectors: the providers come from the CONNECTORS_PROVIDERS setting and a replace keeps them; leave connectors out or send the current list (docs/connectors.md)",
      );
    }
  }
  const storedTools = new Map(cur.tools.map((t) => [t.title, t]));
  const storedAgents = new Map(cur.agents.map((a) => [a.title, a]));
  const storedMcp = new Map(cur.mcp.map((s) => [s.title, s]));
  const storedApi = new Map(cur.apiTools.map((t) => [t.title, t]));

  // Each "<redacted>" keeps the stored literal of the entry with that title, at the URL origin it was entered for.
  const storedAt = (headers: HeaderSpec | undefined, url: string | undefined) =>
    headers && url !== undefined ? { headers, origin: urlOrigin(url) } : undefined;
  const doc: ManifestDocument = {
    ...input,
    tools: input.tools.map((t, i) => {
      const s = storedTools.get(t.title);
      return { ...t, headers: keepStoredLiterals(t.headers, storedAt(s?.headers, s?.url), urlOrigin(t.url), `tools[${i}].headers`) };
    }),
    agents: input.agents.map((a, i) => {
      if (a.kind !== "http") return a;
      const s = storedAgents.get(a.title);
      const stored = s?.kind === "http" ? storedAt(s.config.headers, s.config.url) : undefined;
      return { ...a, config: { ...a.config, headers: keepStoredLiterals(a.config.headers, stored, urlOrigin(a.config.url), `agents[${i}].config.headers`) } };
    }),
    mcp: input.mcp.map((m, i) => {
      const s = storedMcp.get(m.title);
      return {
        ...m,
        config: {
          ...m.config,
          headers: keepStoredLiterals(
            m.config.headers,
            storedAt(s?.spec.config.headers, s?.spec.config.url),
            urlOrigin(m.config.url),
            `mcp[${i}].config.headers`,
          ),
        },
      };
    }),
    api_tools: input.api_tools.map((t, i) => {
      const s = storedApi.get(t.title);
      return {
        ...t,
        headers: keepStoredLiterals(
          t.headers,
          s ? { headers: s.headers, origin: apiToolOrigin(s.url) } : undefined,
          apiToolOrigin(t.url),
          `api_tools[${i}].headers`,
        ),
      };
    }),
  };

  doc.tools.forEach((t, i) => checkEntry(`tools[${i}]`, () => checkHttpToolDeclaration(t, settings, env)));
  doc.agents.forEach((a, i) => checkEntry(`agents[${i}]`, () => checkAgentDeclaration(a, settings, env)));
  doc.mcp.forEach((m, i) => checkMcpDeclaration(m, settings, env, `mcp[${i}].`));
  doc.api_tools.forEach((t, i) => checkApiToolDeclaration(t, settings, env, `api_tools[${i}].`));

  // One namespace for HTTP and API tools; built-ins, presets and plugin-owned names are not the manifest's.
  const toolTitles = new Set<string>();
  for (const [field, list] of [
    ["tools", doc.tools],
    ["api_tools", doc.api_tools],
  ] as const) {
    list.forEach((t, i) => {
      if (isBuiltinTool(t.title)) throw conflict(`${field}[${i}].title is the name of a built-in tool`);
      if (cur.owned.tools.has(t.title)) throw conflict(`${field}[${i}].title is owned by an installed marketplace plugin`);
      if (toolTitles.has(t.title)) throw badRequest(`invalid body: ${field}[${i}].title: names another tool of the document`);
      toolTitles.add(t.title);
    });
  }
  const presets = await all(NameRow, d1(db)`SELECT name FROM presets WHERE name IN (SELECT value FROM json_each(${JSON.stringify([...toolTitles])}))`);
  if (presets.length) throw conflict("a tool of the document has the name of a preset");
  doc.agents.forEach((a, i) => {
    if (BUILTIN_AGENT_NAMES.has(a.title)) throw conflict(`agents[${i}].title is the name of a built-in agent`);
    if (cur.owned.agents.has(a.title)) throw conflict(`agents[${i}].title is owned by an installed marketplace plugin`);
  });
  await assertConnectionsLendable(db, settings.connectors.providers, [
    ...doc.tools.flatMap((t, i) => sentTo(headerConnections(t.headers, `tools[${i}].headers`), t.url)),
    ...doc.agents.flatMap((a, i) => (a.kind === "http" ? sentTo(headerConnections(a.config.headers, `agents[${i}].config.headers`), a.config.url) : [])),
    ...doc.mcp.flatMap((m, i) => sentTo(headerConnections(m.config.headers, `mcp[${i}].config.headers`), m.config.url)),
    ...doc.api_tools.flatMap((t, i) => sentTo(headerConnections(t.headers, `api_tools[${i}].headers`), apiToolOrigin(t.url) ?? "")),
  ]);

  const keep = {
    tools: new Set(doc.tools.map((t) => t.title)),
    agents: new Set(doc.agents.map((a) => a.title)),
    mcp: new Set(doc.mcp.map((m) => m.title)),
    api: new Set(doc.api_tools.map((t) => t.title)),
  };
  const removed = {
    tools: cur.tools.filter((t) => !keep.tools.has(t.title) && !cur.owned.tools.has(t.title)).map((t) => t.title),
    agents: cur.agents.filter((a) => !keep.agents.has(a.title) && !cur.owned.agents.has(a.title)).map((a) => a.title),
    mcp: cur.mcp.filter((s) => !keep.mcp.has(s.title)).map((s) => s.title),
    api_tools: cur.apiTools.filter((t) => !keep.api.has(t.title)).map((t) => t.title),
  };
  // An MCP entry identical to the stored declaration keeps its listing (tools and status).
  const changedMcp = doc.mcp.filter((m) => mcpEntryChanged(storedMcp.get(m.title), m));

  const q = d1(db);
  // The declaration stores (tools, agents, MCP, api tools) hand over D1's prepared statements, so
  // the plan is one list of those; this file's own statements are tagged and prepared into it.
  const statements: D1PreparedStatement[] = [
    // The guards of the batch: a plugin install or a preset that took one of the titles since the
    // checks above makes the CHECK fail, and D1 rolls the whole batch back (as installs do).
    q`INSERT INTO marketplace_guard (violation) SELECT 1 WHERE
        EXISTS (SELECT 1 FROM marketplace_owned WHERE kind = 'http_tool' AND name IN (SELECT value FROM json_each(${titles(doc.tools)})))
        OR EXISTS (SELECT 1 FROM marketplace_owned WHERE kind = 'agent' AND name IN (SELECT value FROM json_each(${titles(doc.agents)})))
        OR EXISTS (SELECT 1 FROM presets WHERE name IN (SELECT value FROM json_each(${JSON.stringify([...toolTitles])})))`.prepared(),
    ...removed.tools.map((t) => q`DELETE FROM tool_declarations WHERE title = ${t}`.prepared()),
    ...doc.tools.map((t) => upsertHttpToolStatement(db, t, nowIso, nowIso, { refusePresetName: false })),
    ...removed.agents.map((t) => q`DELETE FROM agent_declarations WHERE title = ${t}`.prepared()),
    ...doc.agents.map((a) => upsertAgentStatement(db, a, nowIso, nowIso)),
    ...replaceMcpStatements(db, cur.mcp, doc.mcp, nowIso),
    ...removed.api_tools.map((t) => q`DELETE FROM api_tools WHERE title = ${t}`.prepared()),
    ...doc.api_tools.map((t) => upsertApiToolStatement(db, t, nowIso, nowIso, false)),
  ];
  return { doc, statements, removed, relist: changedMcp.map((m) => m.title) };
}

/** Runs the plan's batch; a guard that fired (a title taken meanwhile) is a 409, nothing written. */
export async function applyReplace(db: D1Database, plan: ReplacePlan): Promise<void> {
  try {
    await db.batch(plan.statements);
  } catch (err) {
    if (/CHECK constraint failed/i.test(String(err))) {
      throw conflict("a title of the document was taken by a plugin or a preset meanwhile; read the manifest again and retry");
    }
    throw err;
  }
}
