/**
 * `GET /api/states/{name}/consumers`: what binds the state: target conversation configs
 * and presets (their active version). Hooks and schedules, which bind states too, are not listed.
 */
import { z } from "zod";
import { TargetConversationConfig } from "../persons/target-configs";
import { parseStored } from "../store/parse-stored";
import { listPresets } from "../targets/presets/store";

export const StateConsumer = z.union([
  z.object({ kind: z.literal("conversation_config"), target_kind: z.enum(["agent", "tool"]), target_name: z.string() }),
  z.object({ kind: z.literal("preset"), name: z.string(), version: z.number().int() }),
]);
export type StateConsumer = z.infer<typeof StateConsumer>;

export async function consumersOf(db: D1Database, state: string): Promise<StateConsumer[]> {
  const { results } = await db.prepare("SELECT config FROM conversation_configs ORDER BY target_kind, target_name").all<{ config: string }>();
  const out: StateConsumer[] = [];
  for (const r of results) {
    const c = parseStored(TargetConversationConfig, r.config, "conversation config");
    if (c.state_binding?.states.some((a) => a.state === state)) out.push({ kind: "conversation_config", target_kind: c.target_kind, target_name: c.target_name });
  }
  for (const p of await listPresets(db)) {
    if (p.state_binding?.states.some((a) => a.state === state)) out.push({ kind: "preset", name: p.name, version: p.current_version });
  }
  return out;
}
