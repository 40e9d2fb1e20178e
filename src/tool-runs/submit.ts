/**
 * Submitting a background tool run (docs/tool-runs.md): what the door and a schedule's
 * fire share. The run is stored in its ToolRun object first (queued, its alarm armed for now), then
 * listed in D1 with the one write a submit makes; the object replaces that row when the run ends,
 * so a listing insert lost to a fault is restored then.
 */
import { z } from "zod";
import { type KeyedSubmit, toolRunStub } from "./rpc";
import { type IdempotencyKey, derivedUuid } from "../platform/http/idempotency";
import type { Env } from "../platform/env";
import type { JsonObject } from "../platform/http/bounded-json";
import { type JsonSchema, checkAgainstSchema } from "../platform/json-schema";
import { isToolName } from "../shared/tool-names";
import { toolSchema } from "../targets/tools/registry";
import { insertRunRow } from "./index-store";
import { run } from "../platform/persistence/d1";
import { MAINTENANCE_INPUT_SCHEMA, isMaintenanceTool } from "./maintenance";
import type { ToolRunRequest, ToolRunRecord } from "./record";

export async function submitToolRun(env: Env, req: ToolRunRequest): Promise<ToolRunRecord> {
  const row = await toolRunStub(env, req.run_id).submit(req);
  await run(insertRunRow(env.DB, row));
  return row;
}

/**
 * The door's submit under an `Idempotency-Key` (docs/api-notes.md, "Retrying a request"): the run id
 * is derived from the calling key's lineage and the key, so a retry reaches the run's own object,
 * which answers whether the same request stored it (`replay`: nothing more is done), another one
 * did (`reused`), or this one just did (`new`, then listed as any submit).
 */
export async function submitKeyedToolRun(env: Env, req: Omit<ToolRunRequest, "run_id">, scope: string, key: IdempotencyKey): Promise<KeyedSubmit> {
  const run_id = await derivedUuid("tool-runs", scope, key.key);
  const found = await toolRunStub(env, run_id).submitKeyed({ ...req, run_id, request_hash: key.fingerprint });
  if (found.kind === "new") await run(insertRunRow(env.DB, found.row));
  return found;
}

/** The input schema of tool `name` (a registry tool or a maintenance tool), or null when there is no such tool. */
export async function runInputSchema(db: D1Database, name: string): Promise<JsonSchema | null> {
  if (isMaintenanceTool(name)) return MAINTENANCE_INPUT_SCHEMA;
  return (await toolSchema(db, name))?.input ?? null;
}

/**
 * Checks arguments against the tool's input schema before a run is accepted, so a mistake is a 400
 * now rather than a failed run later (the run checks again: a declaration may change meanwhile).
 * Problems name schema locations, never values.
 */
export function argumentProblems(schema: JsonSchema, args: JsonObject): string | null {
  const check = checkAgainstSchema(schema, args);
  return check.ok ? null : check.problems.join("; ");
}

/** A tool a run may name: a registry tool name (decisions §4) or a maintenance tool. */
export const RunToolName = z.string().refine((n) => isToolName(n) || isMaintenanceTool(n), {
  message: "must be a tool name (1-64 characters of letters, digits, _ and -, or <server>.<tool> for an MCP server's tool) or a maintenance tool's name",
});
