/**
 * Target conversation configs (spec §2.5, §4.8; decisions §12): the frozen shape, its rules, and
 * its D1 store. A config is inert operator data (no key is bound by writing one): it opts a target
 * into persons (`multichannel`), names its first-contact greeting and carries its state binding.
 */
import { z } from "zod";
import { type TargetKind, targetKindRefusing } from "../shared/kinds";
import { intactIdentifier } from "../platform/http/identifiers";
import { CountRow, type Statement, all, batch, d1, first, rowsOf, run } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { StateBinding } from "../shared/state-binding";
import { parseGreetingTemplate } from "./greeting-template";

/** A target kind as a config (and its doors) take it, refused in words. */
export const ConfigTargetKind = targetKindRefusing("must be agent or tool");

/** A target name as a config names it: non-blank (spec: minLength 1), no control characters. */
export const ConfigTargetName = intactIdentifier(
  z
    .string()
    .max(128)
    .refine((s) => s.trim() !== "", { message: "must not be blank" }),
);

/** Longest greeting template, in UTF-16 units (a channel splits what it sends anyway). */
export const MAX_GREETING_CHARS = 4000;

export const TargetConversationConfig = z
  .object({
    target_kind: ConfigTargetKind,
    target_name: ConfigTargetName,
    multichannel: z.boolean().default(false),
    greeting_template: z
      .string()
      .max(MAX_GREETING_CHARS)
      .nullable()
      .default(null)
      .superRefine((t, ctx) => {
        if (t === null) return;
        const parsed = parseGreetingTemplate(t);
        if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.error });
      }),
    state_binding: StateBinding.nullable().default(null),
  })
  .strict()
  .superRefine((c, ctx) => {
    // Decisions §12 via the reference: a binding deposits state around a tool's run; agents take none.
    if (c.state_binding !== null && c.target_kind !== "tool") {
      ctx.addIssue({ code: "custom", path: ["state_binding"], message: "is accepted only on tool targets" });
    }
  });
export type TargetConversationConfig = z.infer<typeof TargetConversationConfig>;

const ConfigRow = z.object({ config: z.string() });

/** The config of (kind, name), or null. */
export async function getConfig(db: D1Database, kind: TargetKind, name: string): Promise<TargetConversationConfig | null> {
  const row = await first(ConfigRow, d1(db)`SELECT config FROM conversation_configs WHERE target_kind = ${kind} AND target_name = ${name}`);
  return row ? parseStored(TargetConversationConfig, row.config, "conversation config") : null;
}

/** Every config, by kind then name. */
export async function listConfigs(db: D1Database): Promise<TargetConversationConfig[]> {
  const rows = await all(ConfigRow, d1(db)`SELECT config FROM conversation_configs ORDER BY target_kind, target_name`);
  return rows.map((r) => parseStored(TargetConversationConfig, r.config, "conversation config"));
}

/**
 * The create-or-replace of `config` as a statement: the config door batches it behind its
 * existence count, a backup import with the rest of its target-configs section.
 */
export function putConfigStatement(db: D1Database, config: TargetConversationConfig, updatedAt: string, storedBy: string): Statement {
  return d1(db)`INSERT INTO conversation_configs (target_kind, target_name, config, updated_at, stored_by)
    VALUES (${config.target_kind}, ${config.target_name}, ${JSON.stringify(config)}, ${updatedAt}, ${storedBy})
    ON CONFLICT(target_kind, target_name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at, stored_by = excluded.stored_by`;
}

/**
 * Creates or replaces `config`, recording `storedBy` as its writer (its state binding runs bounded
 * by that key: src/access-control/stored-by.ts); true when it did not exist before. One statement, so no partial write.
 */
export async function putConfig(db: D1Database, config: TargetConversationConfig, nowIso: string, storedBy: string): Promise<boolean> {
  const countStmt = d1(db)`SELECT COUNT(*) AS n FROM conversation_configs WHERE target_kind = ${config.target_kind} AND target_name = ${config.target_name}`;
  const [existed] = await batch(db, [countStmt, putConfigStatement(db, config, nowIso, storedBy)]);
  return (rowsOf(CountRow, existed.results, countStmt.text)[0]?.n ?? 0) === 0;
}

/** Deletes the config of (kind, name); false when there was none. */
export async function deleteConfig(db: D1Database, kind: TargetKind, name: string): Promise<boolean> {
  const meta = await run(d1(db)`DELETE FROM conversation_configs WHERE target_kind = ${kind} AND target_name = ${name}`);
  return (meta.changes ?? 0) > 0;
}
