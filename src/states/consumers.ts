/**
 * `GET /api/states/{name}/consumers`: what binds the state: target conversation configs,
 * presets (their active version), hooks and schedules. Hooks and schedules are read from their D1
 * rows (`hooks`, and the `schedules` listing each Schedule object mirrors its spec into), so no
 * Schedule object is woken; SQLite's JSON functions pick the rows whose binding names the state.
 */
import { z } from "zod";
import type { Holder } from "../access-control/identity";
import { TargetKind } from "../shared/kinds";
import { TargetConversationConfig } from "../persons/target-configs";
import { type Statement, all, batch, d1, rowsOf, sql, trusted } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { listPresets } from "../targets/presets/store";

export const StateConsumer = z.union([
  z.object({ kind: z.literal("conversation_config"), target_kind: TargetKind, target_name: z.string() }),
  z.object({ kind: z.literal("preset"), name: z.string(), version: z.number().int() }),
  z.object({ kind: z.literal("hook"), name: z.string() }),
  z.object({ kind: z.literal("schedule"), name: z.string() }),
]);
export type StateConsumer = z.infer<typeof StateConsumer>;

/** True for a row whose `state_binding` column names `state` among its states. */
const bindsState = (state: string) => sql`EXISTS (SELECT 1 FROM json_each(state_binding, '$.states') WHERE json_extract(value, '$.state') = ${state})`;

const ConfigRow = z.object({ config: z.string() });
const NameRow = z.object({ name: z.string() });

/**
 * The names in `table` (hooks or schedules) whose binding names `state`. With `registeredBy`, only
 * those it registered since its lineage began: a restricted caller sees of these what their own
 * listings show it, and no more.
 */
function boundNames(db: D1Database, table: "hooks" | "schedules", state: string, registeredBy: Holder | null): Statement {
  const own = registeredBy === null ? sql`` : sql` AND created_by = ${registeredBy.user_id} AND updated_at >= ${registeredBy.since}`;
  return d1(db)`SELECT name FROM ${trusted(table)} WHERE state_binding IS NOT NULL AND ${bindsState(state)}${own} ORDER BY name`;
}

/**
 * Configs by target, presets, then hooks and schedules by name. `registeredBy` narrows the hooks and
 * schedules to one identity's (a restricted caller's); configs and presets belong to no identity.
 */
export async function consumersOf(db: D1Database, state: string, registeredBy: Holder | null): Promise<StateConsumer[]> {
  const configs = await all(ConfigRow, d1(db)`SELECT config FROM conversation_configs ORDER BY target_kind, target_name`);
  const out: StateConsumer[] = [];
  for (const r of configs) {
    const c = parseStored(TargetConversationConfig, r.config, "conversation config");
    if (c.state_binding?.states.some((a) => a.state === state))
      out.push({ kind: "conversation_config", target_kind: c.target_kind, target_name: c.target_name });
  }
  for (const p of await listPresets(db)) {
    if (p.state_binding?.states.some((a) => a.state === state)) out.push({ kind: "preset", name: p.name, version: p.current_version });
  }
  const stmts = [boundNames(db, "hooks", state, registeredBy), boundNames(db, "schedules", state, registeredBy)];
  const [hooks, schedules] = await batch(db, stmts);
  for (const h of rowsOf(NameRow, hooks?.results ?? [], stmts[0]?.text ?? "")) out.push({ kind: "hook", name: h.name });
  for (const s of rowsOf(NameRow, schedules?.results ?? [], stmts[1]?.text ?? "")) out.push({ kind: "schedule", name: s.name });
  return out;
}
