/**
 * The target declaration sections (docs/backup.md): `tools` (declared HTTP tools), `agents`
 * (declared llm and http agents) and `target-secrets` (secret: their literal header values).
 *
 * A literal header value is write-only in this service (reads show "<redacted>"), so it is a
 * secret: the `tools` and `agents` rows carry each declaration as its door takes it without those
 * values, naming the headers in `withheld_headers`. An import finds each withheld value in this
 * import's `target-secrets` rows, else keeps the value the deployment's declaration already has,
 * else refuses the row: a tool silently losing its credential header would fail at every call.
 * `{"env"}` and `{"connection"}` references are not secrets and stay in the rows.
 *
 * A literal belongs to the URL origin it was entered for (src/outbound/origin-lock.ts). An export
 * seals each value for its (kind, title, header, origin) under SETTINGS_ENCRYPTION_KEY
 * (src/backup/secret-values.ts), so it opens only for a declaration of that title sending to that
 * origin; and the deployment's own value is kept only while the imported row keeps its origin.
 * Anything else needs the value in plain text, entered again.
 */
import { assertConnectionsLendable, sentTo } from "../../connectors/references";
import type { TargetKind } from "../../shared/kinds";
import {
  type AgentDeclaration,
  BUILTIN_AGENT_NAMES,
  agentDeclarationSchema,
  checkAgentDeclaration,
  getDeclaredAgent,
  listDeclaredAgents,
  upsertAgentStatement,
} from "../../targets/agents/declarations";
import { type HeaderSpec, headerConnections, headerValueSchema } from "../../outbound/env-refs";
import { movedSecretMessage, urlOrigin } from "../../outbound/origin-lock";
import { d1 } from "../../platform/persistence/d1";
import { targetNameSchema } from "../../shared/target-names";
import { isBuiltinTool } from "../../targets/tools/builtins";
import {
  type HttpToolDeclaration,
  checkHttpToolDeclaration,
  getHttpTool,
  httpToolDeclarationSchema,
  httpToolSpec,
  listHttpTools,
  upsertHttpToolStatement,
} from "../../targets/tools/http-tools";
import { deployedPresets } from "../deployment";
import type { AgentBackupRow, SecretValue, TargetSecretBackupRow, ToolBackupRow } from "../rows";
import { BackupSealer, backupAad, openBackupSecret } from "../secret-values";
import { type ImportContext, atRow, defineSection, parseAtRow, refuseDuplicates, rowFault, runBatch } from "../section";

/** Splits headers into what a non-secret row may carry (references) and the literal values. */
export function splitHeaders(headers: HeaderSpec): { references: HeaderSpec; literals: Record<string, string> } {
  const references: HeaderSpec = {};
  const literals: Record<string, string> = {};
  for (const [name, v] of Object.entries(headers)) {
    if (typeof v === "string") literals[name] = v;
    else references[name] = v;
  }
  return { references, literals };
}

/** Where a sealed literal header value may be restored: the declaration, the header and the URL origin it is sent to. */
export const targetSecretAad = (kind: TargetKind, title: string, header: string, origin: string | null) =>
  backupAad("target-secrets", kind, title, header, origin ?? "");

/** The literal values of the headers the deployment's declaration of (kind, title) has now, and the origin they go to. */
async function deployedLiterals(
  ctx: ImportContext,
  kind: TargetKind,
  title: string,
): Promise<{ literals: Record<string, string>; origin: string | null } | null> {
  if (kind === "tool") {
    const tool = await getHttpTool(ctx.db, title);
    return tool ? { literals: splitHeaders(tool.headers).literals, origin: urlOrigin(tool.url) } : null;
  }
  const agent = await getDeclaredAgent(ctx.db, title);
  if (!agent) return null;
  return agent.kind === "http"
    ? { literals: splitHeaders(agent.config.headers).literals, origin: urlOrigin(agent.config.url) }
    : { literals: {}, origin: null };
}

/** A `target-secrets` row's value of header `name`, opened for the declaration's origin (a plain value as given). */
function openTargetSecret(ctx: ImportContext, index: number, row: TargetSecretBackupRow, name: string, origin: string | null): Promise<string> {
  const k = Object.keys(row.headers).indexOf(name);
  return openBackupSecret(ctx, "target-secrets", index, `headers.${k}`, row.headers[name] as SecretValue, targetSecretAad(row.kind, row.title, name, origin));
}

/**
 * The row's headers with each withheld one filled in: from this import's `target-secrets` (a sealed
 * value opens only for this declaration's URL origin), else the deployment's current literal when
 * the row keeps the origin it was entered for. Refuses a withheld header that has neither.
 */
async function restoreHeaders(
  section: "tools" | "agents",
  i: number,
  ctx: ImportContext,
  title: string,
  headers: HeaderSpec,
  withheld: readonly string[],
  field: string,
  url: string,
): Promise<HeaderSpec> {
  if (!withheld.length) return headers;
  const kind = section === "tools" ? "tool" : "agent";
  const origin = urlOrigin(url);
  const all = ctx.rows["target-secrets"] ?? [];
  const s = all.findIndex((r) => r.kind === kind && r.title === title);
  const current = s >= 0 ? null : await deployedLiterals(ctx, kind, title);
  const out: HeaderSpec = { ...headers };
  for (const [j, name] of withheld.entries()) {
    if (Object.hasOwn(headers, name)) throw rowFault(section, i, `withheld_headers.${j}`, `is also a header of ${field}`);
    if (s >= 0) {
      if (!Object.hasOwn(all[s].headers, name))
        throw rowFault(
          section,
          i,
          `withheld_headers.${j}`,
          "its literal value is neither in this import (import the target-secrets section with it) nor in the deployment's declaration",
        );
      out[name] = await openTargetSecret(ctx, s, all[s], name, origin);
      continue;
    }
    const value = current?.literals[name];
    if (!current || value === undefined) {
      throw rowFault(
        section,
        i,
        `withheld_headers.${j}`,
        "its literal value is neither in this import (import the target-secrets section with it) nor in the deployment's declaration",
      );
    }
    if (current.origin === null || current.origin !== origin)
      throw rowFault(section, i, `withheld_headers.${j}`, movedSecretMessage("the deployment's value of this header"));
    out[name] = value;
  }
  return out;
}

interface ToolPlanRow {
  declaration: HttpToolDeclaration;
  created_at: string;
  updated_at: string;
}

export const toolsSection = defineSection({
  name: "tools",
  secret: false,
  description:
    "Declared HTTP tools as the declaration door takes them; literal header values are withheld (named in withheld_headers; their values are in target-secrets).",
  async exportRows(ctx) {
    return (await listHttpTools(ctx.db)).map((t): ToolBackupRow => {
      const { references, literals } = splitHeaders(t.headers);
      const declaration: HttpToolDeclaration = {
        title: t.title,
        kind: "http",
        description: t.description,
        url: t.url,
        method: t.method,
        headers: references,
        timeout_seconds: t.timeout_seconds,
      };
      if (t.input_schema) declaration.input_schema = t.input_schema as HttpToolDeclaration["input_schema"];
      return { declaration, withheld_headers: Object.keys(literals), created_at: t.created_at, updated_at: t.updated_at };
    });
  },
  async validate(rows, ctx) {
    refuseDuplicates("tools", rows, (r) => r.declaration.title, "title");
    const presets = new Set([...(await deployedPresets(ctx)), ...(ctx.rows.presets ?? []).map((p) => p.name)]);
    const plan: ToolPlanRow[] = [];
    for (const [i, row] of rows.entries()) {
      const title = row.declaration.title;
      if (isBuiltinTool(title)) throw rowFault("tools", i, "declaration.title", "is the name of a built-in tool");
      if (presets.has(title)) throw rowFault("tools", i, "declaration.title", "is the name of a preset (in the deployment or this import)");
      const headers = await restoreHeaders("tools", i, ctx, title, row.declaration.headers, row.withheld_headers, "declaration.headers", row.declaration.url);
      const declaration = parseAtRow("tools", i, "declaration", httpToolDeclarationSchema, { ...row.declaration, headers });
      await atRow("tools", i, () => checkHttpToolDeclaration(declaration, ctx.settings, ctx.env));
      await atRow("tools", i, () =>
        assertConnectionsLendable(
          ctx.db,
          ctx.settings.connectors.providers,
          sentTo(headerConnections(declaration.headers, "declaration.headers"), declaration.url),
        ),
      );
      plan.push({ declaration, created_at: row.created_at, updated_at: row.updated_at });
    }
    return plan;
  },
  async apply(plan, ctx) {
    await runBatch(
      ctx.db,
      // Titles were checked against presets in validate; see upsertHttpToolStatement.
      plan.map(({ declaration, created_at, updated_at }) => upsertHttpToolStatement(ctx.db, declaration, created_at, updated_at, { refusePresetName: false })),
    );
    return { applied: plan.length };
  },
});

interface AgentPlanRow {
  declaration: AgentDeclaration;
  created_at: string;
  updated_at: string;
}

export const agentsSection = defineSection({
  name: "agents",
  secret: false,
  description: "Declared llm and http agents as the declaration door takes them; an http agent's literal header values are withheld (in target-secrets).",
  async exportRows(ctx) {
    return (await listDeclaredAgents(ctx.db)).map((a): AgentBackupRow => {
      const { created_at, updated_at, ...declared } = a;
      if (declared.kind !== "http") return { declaration: declared, withheld_headers: [], created_at, updated_at };
      const { references, literals } = splitHeaders(declared.config.headers);
      return {
        declaration: { ...declared, config: { ...declared.config, headers: references } },
        withheld_headers: Object.keys(literals),
        created_at,
        updated_at,
      };
    });
  },
  async validate(rows, ctx) {
    refuseDuplicates("agents", rows, (r) => r.declaration.title, "title");
    const plan: AgentPlanRow[] = [];
    for (const [i, row] of rows.entries()) {
      const d = row.declaration;
      if (BUILTIN_AGENT_NAMES.has(d.title)) throw rowFault("agents", i, "declaration.title", "is the name of a built-in agent");
      let declaration: AgentDeclaration;
      if (d.kind === "http") {
        const headers = await restoreHeaders("agents", i, ctx, d.title, d.config.headers, row.withheld_headers, "declaration.config.headers", d.config.url);
        declaration = parseAtRow("agents", i, "declaration", agentDeclarationSchema, { ...d, config: { ...d.config, headers } });
      } else {
        if (row.withheld_headers.length) throw rowFault("agents", i, "withheld_headers", "an llm agent has no headers");
        declaration = d;
      }
      await atRow("agents", i, () => checkAgentDeclaration(declaration, ctx.settings, ctx.env));
      if (declaration.kind === "http") {
        const config = declaration.config;
        await atRow("agents", i, () =>
          assertConnectionsLendable(
            ctx.db,
            ctx.settings.connectors.providers,
            sentTo(headerConnections(config.headers, "declaration.config.headers"), config.url),
          ),
        );
      }
      plan.push({ declaration, created_at: row.created_at, updated_at: row.updated_at });
    }
    return plan;
  },
  async apply(plan, ctx) {
    await runBatch(
      ctx.db,
      plan.map(({ declaration, created_at, updated_at }) => upsertAgentStatement(ctx.db, declaration, created_at, updated_at)),
    );
    return { applied: plan.length };
  },
});

const LiteralHeaderValue = headerValueSchema.options[0];

/** A standalone secrets row (its declaration is not in this import): the declaration's new stored JSON. */
type SecretUpdate = { kind: "tool"; title: string; spec: string } | { kind: "agent"; title: string; config: string };

export const targetSecretsSection = defineSection({
  name: "target-secrets",
  secret: true,
  description:
    "The literal header values of declared HTTP tools and http agents, by tool or agent, each sealed under SETTINGS_ENCRYPTION_KEY for its declaration, header and URL origin: it opens only in a deployment holding that key, for that declaration at that origin.",
  async exportRows(ctx) {
    const sealer = new BackupSealer(ctx);
    const sealAll = async (kind: TargetKind, title: string, literals: Record<string, string>, url: string) => {
      const headers: Record<string, SecretValue> = {};
      for (const [name, value] of Object.entries(literals)) headers[name] = await sealer.seal(value, targetSecretAad(kind, title, name, urlOrigin(url)));
      return headers;
    };
    const rows: TargetSecretBackupRow[] = [];
    for (const t of await listHttpTools(ctx.db)) {
      const { literals } = splitHeaders(t.headers);
      if (Object.keys(literals).length) rows.push({ kind: "tool", title: t.title, headers: await sealAll("tool", t.title, literals, t.url) });
    }
    for (const a of await listDeclaredAgents(ctx.db)) {
      if (a.kind !== "http") continue;
      const { literals } = splitHeaders(a.config.headers);
      if (Object.keys(literals).length) rows.push({ kind: "agent", title: a.title, headers: await sealAll("agent", a.title, literals, a.config.url) });
    }
    return rows;
  },
  async validate(rows, ctx) {
    refuseDuplicates("target-secrets", rows, (r) => `${r.kind}:${r.title}`, "(kind, title)");
    const standalone: SecretUpdate[] = [];
    for (const [i, row] of rows.entries()) {
      parseAtRow("target-secrets", i, "title", targetNameSchema, row.title);
      const names = Object.keys(row.headers);
      if (names.length === 0 || names.length > 32) throw rowFault("target-secrets", i, "headers", "must hold 1 to 32 headers");
      // A sealed value is checked once opened (by its partner row, or below for a standalone row).
      for (const [j, name] of names.entries())
        if (typeof row.headers[name] === "string") parseAtRow("target-secrets", i, `headers.${j}`, LiteralHeaderValue, row.headers[name]);
      const partner =
        row.kind === "tool" ? ctx.rows.tools?.find((t) => t.declaration.title === row.title) : ctx.rows.agents?.find((a) => a.declaration.title === row.title);
      if (partner) {
        const j = names.findIndex((n) => !partner.withheld_headers.includes(n));
        if (j >= 0)
          throw rowFault(
            "target-secrets",
            i,
            `headers.${j}`,
            `is not among the withheld_headers of this import's ${row.kind === "tool" ? "tools" : "agents"} row`,
          );
        continue;
      }
      standalone.push(await standaloneUpdate(ctx, i, row, names));
    }
    return { count: rows.length, standalone };
  },
  async apply(plan, ctx) {
    const now = ctx.nowIso;
    await runBatch(
      ctx.db,
      plan.standalone.map((u) =>
        u.kind === "tool"
          ? d1(ctx.db)`UPDATE tool_declarations SET spec = ${u.spec}, updated_at = ${now} WHERE title = ${u.title}`
          : d1(ctx.db)`UPDATE agent_declarations SET config = ${u.config}, updated_at = ${now} WHERE title = ${u.title}`,
      ),
    );
    return { applied: plan.count };
  },
});

/**
 * Secrets for a declaration already in the deployment: each must replace one of its literal
 * headers, and a sealed one opens only for the origin the deployment's declaration sends to.
 */
async function standaloneUpdate(ctx: ImportContext, i: number, row: TargetSecretBackupRow, names: string[]): Promise<SecretUpdate> {
  const literalOnly = async (headers: HeaderSpec, url: string) => {
    const j = names.findIndex((n) => typeof headers[n] !== "string");
    if (j >= 0) throw rowFault("target-secrets", i, `headers.${j}`, "is not a literal header of the deployment's declaration");
    const out: HeaderSpec = { ...headers };
    for (const [k, name] of names.entries())
      out[name] = parseAtRow("target-secrets", i, `headers.${k}`, LiteralHeaderValue, await openTargetSecret(ctx, i, row, name, urlOrigin(url)));
    return out;
  };
  if (row.kind === "tool") {
    const tool = await getHttpTool(ctx.db, row.title);
    if (!tool) throw rowFault("target-secrets", i, "title", "no such tool in the deployment or this import's tools section");
    const headers = await literalOnly(tool.headers, tool.url);
    return {
      kind: "tool",
      title: row.title,
      spec: httpToolSpec({
        title: tool.title,
        kind: "http",
        description: tool.description,
        url: tool.url,
        method: tool.method,
        headers,
        input_schema: (tool.input_schema ?? undefined) as HttpToolDeclaration["input_schema"],
        timeout_seconds: tool.timeout_seconds,
      }),
    };
  }
  const agent = await getDeclaredAgent(ctx.db, row.title);
  if (!agent || agent.kind !== "http") throw rowFault("target-secrets", i, "title", "no such http agent in the deployment or this import's agents section");
  return { kind: "agent", title: row.title, config: JSON.stringify({ ...agent.config, headers: await literalOnly(agent.config.headers, agent.config.url) }) };
}
