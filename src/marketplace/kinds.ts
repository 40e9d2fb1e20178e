/**
 * The declaration kinds a bundle installs, one place per kind: where its rows live, how a
 * declaration is checked against this deployment's policy, shown, written and removed. The writes
 * are statements, never run here, so an install, update or uninstall is one D1 batch
 * (src/marketplace/apply.ts). The rows are exactly the ones the kinds' own doors write
 * (src/targets/tools/http-tools.ts, agents/declarations.ts, presets/store.ts), so an installed
 * declaration is indistinguishable from one declared by hand. A later kind joins here.
 */
import { STORED_BY_PLUGIN } from "../access-control/stored-by";
import type { EnvVars } from "../platform/env";
import type { TargetKind } from "../shared/kinds";
import { type Statement, d1, trusted } from "../platform/persistence/d1";
import type { JsonObject } from "../platform/http/bounded-json";
import { HttpError } from "../platform/http/errors";
import type { Settings } from "../platform/settings/settings";
import { BUILTIN_AGENT_NAMES, type AgentDeclaration, checkAgentDeclaration } from "../targets/agents/declarations";
import { redactHeaders } from "../outbound/env-refs";
import { initialBody } from "../targets/presets/model";
import { isBuiltinTool } from "../targets/tools/builtins";
import { type HttpToolDeclaration, checkHttpToolDeclaration } from "../targets/tools/http-tools";
import type { DeclarationBundle, DeclarationKind, PluginPreset } from "./contract";

export type Declaration =
  | { kind: "http_tool"; name: string; index: number; body: HttpToolDeclaration }
  | { kind: "agent"; name: string; index: number; body: AgentDeclaration }
  | { kind: "preset"; name: string; index: number; body: PluginPreset };

/** Where a kind's rows live. Tools and presets share one name space: a preset is a tool name. */
export const KIND_TABLES: Readonly<Record<DeclarationKind, { table: string; key: string; section: string; namespace: TargetKind }>> = {
  http_tool: { table: "tool_declarations", key: "title", section: "http_tools", namespace: "tool" },
  agent: { table: "agent_declarations", key: "title", section: "agents", namespace: "agent" },
  preset: { table: "presets", key: "name", section: "presets", namespace: "tool" },
};

/** The bundle's declarations in section order. */
export function declarationsOf(b: DeclarationBundle): Declaration[] {
  return [
    ...b.http_tools.map((body, index) => ({ kind: "http_tool" as const, name: body.title, index, body })),
    ...b.agents.map((body, index) => ({ kind: "agent" as const, name: body.title, index, body })),
    ...b.presets.map((body, index) => ({ kind: "preset" as const, name: body.name, index, body })),
  ];
}

/** Where a declaration sits in its bundle, for messages: `http_tools[0] (weather-lookup)`. */
export function placeOf(d: Declaration): string {
  return `${KIND_TABLES[d.kind].section}[${d.index}] (${d.name})`;
}

/** Whether a name belongs to something built in (never declared, never replaced). */
export function isBuiltin(kind: DeclarationKind, name: string): boolean {
  return KIND_TABLES[kind].namespace === "tool" ? isBuiltinTool(name) : BUILTIN_AGENT_NAMES.has(name);
}

/**
 * The kind's own declaration checks that need the settings (the outbound address guard on URLs,
 * the secret-reference scope of `{"env"}` references): each refusal as a problem naming the
 * declaration and the field, never a URL or a variable. Presets' base tools are checked in the plan.
 */
export async function policyProblems(d: Declaration, settings: Settings, env: EnvVars): Promise<string[]> {
  const local = localReferences(d);
  if (local.length)
    return local.map((field) => `${placeOf(d)}: ${field}: a plugin may not reference a connector connection (connections belong to this deployment)`);
  try {
    if (d.kind === "http_tool") await checkHttpToolDeclaration(d.body, settings, env);
    else if (d.kind === "agent") await checkAgentDeclaration(d.body, settings, env);
    return [];
  } catch (err) {
    if (err instanceof HttpError && err.status < 500) return [`${placeOf(d)}: ${err.message.replace(/^invalid body: /, "")}`];
    throw err;
  }
}

/**
 * Header values that are neither a literal nor an `{"env"}` reference: connection references
 * (`{"connection": id}`, docs/connectors.md). A connection id only means something in the
 * deployment that made it, and whoever references one must be allowed to use it; a registry can
 * be neither, so bundles may not carry them.
 */
function localReferences(d: Declaration): string[] {
  const headers =
    d.kind === "http_tool"
      ? { at: "headers", h: d.body.headers }
      : d.kind === "agent" && d.body.kind === "http"
        ? { at: "config.headers", h: d.body.config.headers }
        : null;
  if (!headers) return [];
  return Object.entries(headers.h as Record<string, unknown>)
    .filter(([, v]) => typeof v === "object" && v !== null && !("env" in v))
    .map(([name]) => `${headers.at}.${name}`);
}

/** A declaration as previews show it: literal header values redacted, as every read of them is. */
export function declarationView(d: Declaration): JsonObject {
  if (d.kind === "http_tool") return { ...d.body, headers: redactHeaders(d.body.headers) } as unknown as JsonObject;
  if (d.kind === "agent" && d.body.kind === "http")
    return { ...d.body, config: { ...d.body.config, headers: redactHeaders(d.body.config.headers) } } as unknown as JsonObject;
  return d.body as unknown as JsonObject;
}

/** A preset's version body as stored (the preset door's `initialBody`). */
export function presetBody(p: PluginPreset): ReturnType<typeof initialBody> {
  return initialBody(p);
}

/** JSON with sorted keys, so two bodies compare by content. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * Statements that write `d`. `existing` tells a replace from an add: an HTTP tool or agent is
 * upserted either way; a preset is created at version 1, or gets a new version (made current) when
 * its body changed, so a plugin update keeps the preset's history like any new version does.
 */
export function writeStatements(db: D1Database, d: Declaration, existing: { exists: boolean; currentBody: string | null }, nowIso: string): Statement[] {
  const q = d1(db);
  switch (d.kind) {
    case "http_tool": {
      const spec = JSON.stringify({
        url: d.body.url,
        method: d.body.method,
        headers: d.body.headers,
        input_schema: d.body.input_schema ?? null,
        timeout_seconds: d.body.timeout_seconds,
      });
      return [
        q`INSERT INTO tool_declarations (title, kind, description, spec, created_at, updated_at) VALUES (${d.name}, 'http', ${d.body.description}, ${spec}, ${nowIso}, ${nowIso})
             ON CONFLICT(title) DO UPDATE SET kind = excluded.kind, description = excluded.description, spec = excluded.spec, updated_at = excluded.updated_at`,
      ];
    }
    case "agent":
      return [
        q`INSERT INTO agent_declarations (title, kind, description, config, created_at, updated_at)
             VALUES (${d.name}, ${d.body.kind}, ${d.body.description}, ${JSON.stringify(d.body.config)}, ${nowIso}, ${nowIso})
             ON CONFLICT(title) DO UPDATE SET kind = excluded.kind, description = excluded.description, config = excluded.config, updated_at = excluded.updated_at`,
      ];
    case "preset": {
      const body = JSON.stringify(presetBody(d.body));
      if (!existing.exists) {
        return [
          q`INSERT INTO presets (name, current_version, latest_version, created_at, updated_at, stored_by) VALUES (${d.name}, 1, 1, ${nowIso}, ${nowIso}, ${STORED_BY_PLUGIN})`,
          q`INSERT INTO preset_versions (name, version, body, tags, created_at) VALUES (${d.name}, 1, ${body}, '[]', ${nowIso})`,
        ];
      }
      if (existing.currentBody !== null && canonicalJson(JSON.parse(existing.currentBody)) === canonicalJson(JSON.parse(body))) return [];
      return [
        q`INSERT INTO preset_versions (name, version, body, tags, created_at) SELECT name, latest_version + 1, ${body}, '[]', ${nowIso} FROM presets WHERE name = ${d.name}`,
        q`UPDATE presets SET latest_version = latest_version + 1, current_version = latest_version + 1, updated_at = ${nowIso}, stored_by = ${STORED_BY_PLUGIN} WHERE name = ${d.name}`,
      ];
    }
  }
}

/** Statements that remove the declaration `kind`/`name` (nothing happens when it is already gone). */
export function removeStatements(db: D1Database, kind: DeclarationKind, name: string): Statement[] {
  const q = d1(db);
  if (kind === "preset") return [q`DELETE FROM preset_versions WHERE name = ${name}`, q`DELETE FROM presets WHERE name = ${name}`];
  const { table, key } = KIND_TABLES[kind];
  // Table and key column come from KIND_TABLES, this file's constant.
  return [q`DELETE FROM ${trusted(table)} WHERE ${trusted(key)} = ${name}`];
}
