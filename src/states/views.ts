/**
 * The shapes the states doors answer (spec §2.10; platform-facts A3, B5), each a zod
 * schema with its type under the same name: the StateStore contract (src/states/rpc.ts)
 * speaks these types, and the OpenAPI document is generated from the schemas.
 */
import { z } from "zod";
import { TargetKind } from "../shared/kinds";
import { JsonObject, JsonValue } from "../platform/http/bounded-json";

/** Whose record: a target's subject of some kind (`thread`, `person`, or an operator's own kind). */
export const Subject = z.object({ target_kind: TargetKind, target_name: z.string(), kind: z.string(), key: z.string() }).describe("StateSubject");
export type Subject = z.infer<typeof Subject>;

export const RegimeRule = z.object({ path: z.array(z.string()), regime: z.enum(["single", "composing"]) });
export type RegimeRule = z.infer<typeof RegimeRule>;

export const AttachmentView = z.object({ template: z.string(), path: z.array(z.string()), parameters: JsonObject, declarations: JsonObject });
export type AttachmentView = z.infer<typeof AttachmentView>;

export const StateView = z
  .object({
    name: z.string(),
    description: z.string(),
    schema: JsonValue,
    effective_schema: JsonObject,
    subject_kinds: z.array(z.string()),
    default_subject_kind: z.string(),
    retention_days: z.number().int().nullable(),
    attachments: z.array(AttachmentView),
    regimes: z.array(RegimeRule),
    updated_at: z.string(),
  })
  .describe("State");
export type StateView = z.infer<typeof StateView>;

export const StateRecord = z
  .object({
    state: z.string(),
    subject: Subject,
    data: JsonObject,
    seq: z.number().int(),
    canonical_subject: Subject,
    folded_from: z.array(Subject),
  })
  .describe("StateRecord");
export type StateRecord = z.infer<typeof StateRecord>;

export const WriteOrigin = z.object({
  /** Who wrote: an operator door (`api`), a bound turn (`turn`), or a hook's or schedule's bound run (`hook`, `schedule`). */
  door: z.enum(["api", "turn", "hook", "schedule"]),
  actor: z.string().nullable(),
  consumer: z.string().nullable(),
  meta: JsonObject.nullable(),
  run_id: z.string().nullable(),
  op_id: z.string().nullable(),
  turn_id: z.string().nullable(),
  inbound_id: z.string().nullable(),
});
export type WriteOrigin = z.infer<typeof WriteOrigin>;

export const WriteEntry = z.object({ seq: z.number().int(), at: z.string(), origin: WriteOrigin, paths: z.array(z.array(z.union([z.string(), z.number()]))) });
export type WriteEntry = z.infer<typeof WriteEntry>;

export const StateStats = z.object({
  name: z.string(),
  records: z.number().int(),
  by_kind: z.record(z.string(), z.number().int()),
  aliases: z.number().int(),
  writes: z.number().int(),
  oldest_updated_at: z.string().nullable(),
  newest_updated_at: z.string().nullable(),
});
export type StateStats = z.infer<typeof StateStats>;

export const FoldResult = z.object({
  mode: z.enum(["switch", "merge"]),
  from: Subject,
  into: Subject,
  already: z.boolean(),
  flattened: z.number().int(),
  merged_members: z.number().int(),
});
export type FoldResult = z.infer<typeof FoldResult>;

/** A cursor page (records, subjects, writes). */
export function cursorPage<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), next_cursor: z.string().nullable() });
}
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}
