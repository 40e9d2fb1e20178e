/**
 * The hooks in D1 (`hooks`, migration 0017; docs/hooks.md). One row per hook name, written whole
 * by a registration (a re-post of a name replaces it, keeping `created_at`); a public fire reads the
 * rows of its topic in the same round trip as the topic's verifier binding.
 */
import type { Holder } from "../access-control/identity";
import { CountRow, type SqlFragment, all, d1, first, join, run, sql, trusted } from "../platform/persistence/d1";
import { validStored } from "../platform/persistence/stored-json";
import { type HookRow, StoredHookRow } from "./record";

/** Most hooks one topic may carry: a fire evaluates each one's jq in the request. */
export const MAX_HOOKS_PER_TOPIC = 32;

const COLUMNS = trusted(
  "name, topic, tool, execution_key, execution_key_fingerprint, tool_kwargs, condition, condition_id, condition_kwargs, condition_program, expr, expr_id, expr_kwargs, expr_program, state_binding, created_by, created_at, updated_at",
);

const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));

/** Creates or replaces hook `row.name` (a replace keeps the stored `created_at`). */
export function upsertHookStatement(db: D1Database, row: HookRow): D1PreparedStatement {
  return d1(db)`INSERT INTO hooks (${COLUMNS}) VALUES (${row.name}, ${row.topic}, ${row.tool}, ${row.execution_key}, ${row.execution_key_fingerprint},
         ${JSON.stringify(row.tool_kwargs)}, ${row.condition}, ${row.condition_id}, ${json(row.condition_kwargs)}, ${row.condition_program},
         ${row.expr}, ${row.expr_id}, ${json(row.expr_kwargs)}, ${row.expr_program}, ${json(row.state_binding)}, ${row.created_by}, ${row.created_at}, ${row.updated_at})
       ON CONFLICT (name) DO UPDATE SET topic = excluded.topic, tool = excluded.tool, execution_key = excluded.execution_key,
         execution_key_fingerprint = excluded.execution_key_fingerprint, tool_kwargs = excluded.tool_kwargs,
         condition = excluded.condition, condition_id = excluded.condition_id, condition_kwargs = excluded.condition_kwargs,
         condition_program = excluded.condition_program, expr = excluded.expr, expr_id = excluded.expr_id,
         expr_kwargs = excluded.expr_kwargs, expr_program = excluded.expr_program, state_binding = excluded.state_binding,
         created_by = excluded.created_by, updated_at = excluded.updated_at`.prepared();
}

export function parseHookRow(raw: Record<string, unknown>): HookRow {
  return validStored(StoredHookRow, raw, "hooks row");
}

export async function getHook(db: D1Database, name: string): Promise<HookRow | null> {
  return first(StoredHookRow, d1(db)`SELECT ${COLUMNS} FROM hooks WHERE name = ${name}`);
}

/** The statement reading a topic's hooks by name (a fire batches it with the verifier read). */
export function topicHooksStatement(db: D1Database, topic: string): D1PreparedStatement {
  return d1(db)`SELECT ${COLUMNS} FROM hooks WHERE topic = ${topic} ORDER BY name LIMIT ${MAX_HOOKS_PER_TOPIC}`.prepared();
}

/**
 * Hooks by name; `topic` narrows to one topic, `createdBy` to one creator's lineage (a restricted
 * caller's listing: registered by its user_id since its key lineage began, src/access-control/identity.ts).
 */
export async function listHooks(db: D1Database, filter: { topic?: string; createdBy?: Holder }): Promise<HookRow[]> {
  const where: SqlFragment[] = [];
  if (filter.topic !== undefined) where.push(sql`topic = ${filter.topic}`);
  // `updated_at` is set with `created_by` at every registration.
  if (filter.createdBy !== undefined) where.push(sql`created_by = ${filter.createdBy.user_id} AND updated_at >= ${filter.createdBy.since}`);
  return all(StoredHookRow, d1(db)`SELECT ${COLUMNS} FROM hooks ${where.length ? sql`WHERE ${join(where, " AND ")}` : sql``} ORDER BY name`);
}

/** How many hooks topic `topic` carries besides hook `except` (the one a registration replaces). */
export async function countTopicHooks(db: D1Database, topic: string, except: string): Promise<number> {
  const r = await first(CountRow, d1(db)`SELECT COUNT(*) AS n FROM hooks WHERE topic = ${topic} AND name != ${except}`);
  return r?.n ?? 0;
}

export async function deleteHook(db: D1Database, name: string): Promise<boolean> {
  return (await run(d1(db)`DELETE FROM hooks WHERE name = ${name}`)).changes > 0;
}
