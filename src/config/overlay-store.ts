/**
 * The overlay's rows in D1 (migrations/0013_settings_overlay.sql): reads, and the one write shape
 * every change takes (overlay edit, profile apply, reload, re-seal): a single D1 batch that first
 * checks the generation the writer validated against, then changes rows, then bumps the
 * generation. Either all of it lands or none.
 */
import { z } from "zod";
import { conflict } from "../platform/http/errors";
import { type Statement, batch, d1, first, rowsOf, sql } from "../platform/persistence/d1";

/** The tables of the runtime settings (for backups and tests). */
export const SETTINGS_TABLES = ["settings_overlay", "settings_generation", "config_profiles"] as const;

/** One stored overlay row: `value` is the text, or the sealed JSON when `secret` is 1. */
export const OverlayRow = z
  .object({
    name: z.string(),
    value: z.string(),
    secret: z.union([z.literal(0), z.literal(1)]),
    updated_at: z.string(),
  })
  .strict();
export type OverlayRow = z.infer<typeof OverlayRow>;

export const GenerationRow = z.object({ generation: z.number().int(), updated_at: z.string() }).strict();
export type GenerationRow = z.infer<typeof GenerationRow>;

export interface StoredOverlay {
  generation: number;
  updatedAt: string;
  rows: OverlayRow[];
}

const GENERATION_SQL = sql`SELECT generation, updated_at FROM settings_generation WHERE id = 1`;
const NewGenerationRow = z.object({ generation: z.number().int() });

/** The generation alone: the steady-state check, one small statement. */
export async function readGeneration(db: D1Database): Promise<number> {
  const row = await first(GenerationRow, d1(db, GENERATION_SQL));
  return row?.generation ?? 0;
}

/** The generation and every row, read together (one batch, one snapshot). */
export async function readOverlay(db: D1Database): Promise<StoredOverlay> {
  const rowsRead = d1(db)`SELECT name, value, secret, updated_at FROM settings_overlay ORDER BY name`;
  const [gen, rows] = await batch(db, [d1(db, GENERATION_SQL), rowsRead]);
  const [g = { generation: 0, updated_at: "1970-01-01T00:00:00.000Z" }] = rowsOf(GenerationRow, gen.results.slice(0, 1), GENERATION_SQL.text);
  return { generation: g.generation, updatedAt: g.updated_at, rows: rowsOf(OverlayRow, rows.results, rowsRead.text) };
}

export interface OverlayChange {
  /** The generation the writer read and validated against; the write fails (409) if it moved. */
  expectedGeneration: number;
  /** Drop every row first (a profile apply replaces the whole overlay). */
  replaceAll?: boolean;
  upserts: Array<{ name: string; value: string; secret: boolean }>;
  deletes: string[];
  now: string;
  /** Further statements of the same atomic step (a reload's profile re-seals). */
  extra?: Statement[];
}

/** Raised when another write moved the generation between this writer's read and its batch. */
export const generationMoved = () => conflict("the settings changed meanwhile (another write landed first); read them again and retry");

/** Applies `change` atomically and returns the new generation. */
export async function writeOverlay(db: D1Database, change: OverlayChange): Promise<number> {
  const q = d1(db);
  const stmts: Statement[] = [
    q`INSERT INTO settings_write_guard (violation) SELECT 1 WHERE (SELECT generation FROM settings_generation WHERE id = 1) IS NOT ${change.expectedGeneration}`,
  ];
  if (change.replaceAll) stmts.push(q`DELETE FROM settings_overlay`);
  for (const name of change.deletes) stmts.push(q`DELETE FROM settings_overlay WHERE name = ${name}`);
  for (const u of change.upserts) {
    stmts.push(
      q`INSERT INTO settings_overlay (name, value, secret, updated_at) VALUES (${u.name}, ${u.value}, ${u.secret ? 1 : 0}, ${change.now}) ON CONFLICT (name) DO UPDATE SET value = excluded.value, secret = excluded.secret, updated_at = excluded.updated_at`,
    );
  }
  stmts.push(...(change.extra ?? []));
  const bump = q`UPDATE settings_generation SET generation = generation + 1, updated_at = ${change.now} WHERE id = 1 RETURNING generation`;
  stmts.push(bump);
  let results: D1Result[];
  try {
    results = await batch(db, stmts);
  } catch (err) {
    if (/CHECK constraint failed/i.test(String(err))) throw generationMoved();
    throw err;
  }
  const [last] = rowsOf(NewGenerationRow, results[results.length - 1].results.slice(0, 1), bump.text);
  return last?.generation ?? change.expectedGeneration + 1;
}
