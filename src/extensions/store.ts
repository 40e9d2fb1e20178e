/**
 * A declared tool's combos in D1 (`tool_extensions`, migration 0021). Built-in tools have none and
 * a preset keeps its own in its version body, so only other tools have a row.
 */
import { type KeyWithOwner, keyColumns, parsePrefixedKey } from "../auth/key-store";
import { storedByUserIdSql } from "../auth/stored-by";
import { unavailable } from "../http/errors";
import { parseStored } from "../platform/persistence/stored-json";
import { type Combo, Combos } from "./combos";

type Row = { combos: string; updated_at: string; stored_by: string } & Record<string, unknown>;

/** Who set a tool's combos, and that key's live record and owner (read with the combos). */
export interface CombosWriter {
  stored_by: string;
  holder: KeyWithOwner | null;
}

/** The tool's combos as stored, with the stored JSON text (for a compare-and-set write); none when absent. */
export async function readToolCombosRow(db: D1Database, tool: string): Promise<{ combos: Combo[]; text: string | null }> {
  const r = await toolCombosStatement(db, tool).first<Row>();
  if (!r) return { combos: [], text: null };
  return { combos: parseStored(Combos, r.combos, "tool_extensions row"), text: r.combos };
}

/** The tool's combos ([] when it has none). */
export async function readToolCombos(db: D1Database, tool: string): Promise<Combo[]> {
  return (await readToolCombosRow(db, tool)).combos;
}

/**
 * The read of a tool's combos as one statement, for the registry to put in the batch that
 * resolves the tool: a declared tool's call then costs no extra D1 round trip for its chain. The
 * combos' writer (and owner) comes with them: the combos wrap the tool only while that key may
 * still run it (src/auth/stored-by.ts).
 */
export function toolCombosStatement(db: D1Database, tool: string): D1PreparedStatement {
  return db
    .prepare(
      `SELECT e.combos, e.updated_at, e.stored_by, ${keyColumns("sk", "sk_")}, ${keyColumns("so", "so_")}
       FROM tool_extensions e LEFT JOIN api_keys sk ON sk.user_id = ${storedByUserIdSql("e.stored_by")} LEFT JOIN api_keys so ON so.user_id = sk.owner_user_id
       WHERE e.tool_name = ?`,
    )
    .bind(tool);
}

/** The combos' writer in `toolCombosStatement`'s result (null when the tool has no row). */
export function combosWriterOf(result: D1Result): CombosWriter | null {
  const r = result.results[0] as Row | undefined;
  return r ? { stored_by: r.stored_by, holder: parsePrefixedKey(r, "sk_", "so_") } : null;
}

/** The combos in `toolCombosStatement`'s result ([] when the tool has no row). */
export function combosOf(result: D1Result): Combo[] {
  const r = result.results[0] as Row | undefined;
  return r ? parseStored(Combos, r.combos, "tool_extensions row") : [];
}

/**
 * Writes `combos` only if the row still holds `expected` (null: no row), so two concurrent edits
 * never lose one another's change: the loser re-reads and tries again. An empty list removes the
 * row. Answers false when the row changed meanwhile.
 */
async function compareAndSet(db: D1Database, tool: string, expected: string | null, combos: Combo[], nowIso: string, storedBy: string): Promise<boolean> {
  const text = JSON.stringify(combos);
  let stmt: D1PreparedStatement;
  if (expected === null) {
    if (!combos.length) return (await db.prepare("SELECT 1 AS one FROM tool_extensions WHERE tool_name = ?").bind(tool).first()) === null;
    stmt = db
      .prepare("INSERT INTO tool_extensions (tool_name, combos, updated_at, stored_by) VALUES (?1, ?2, ?3, ?4) ON CONFLICT(tool_name) DO NOTHING")
      .bind(tool, text, nowIso, storedBy);
  } else if (!combos.length) {
    stmt = db.prepare("DELETE FROM tool_extensions WHERE tool_name = ?1 AND combos = ?2").bind(tool, expected);
  } else {
    stmt = db
      .prepare("UPDATE tool_extensions SET combos = ?2, updated_at = ?3, stored_by = ?5 WHERE tool_name = ?1 AND combos = ?4")
      .bind(tool, text, nowIso, expected, storedBy);
  }
  return ((await stmt.run()).meta.changes ?? 0) > 0;
}

const ATTEMPTS = 3;

/**
 * Reads the tool's combos, computes the new list with `edit` (which may throw an HttpError) and
 * writes it atomically against the read, recording `storedBy` as the combos' writer. A row that
 * keeps changing under us is a 503 to retry.
 */
export async function updateToolCombos(db: D1Database, tool: string, edit: (current: Combo[]) => Combo[], nowIso: string, storedBy: string): Promise<Combo[]> {
  for (let i = 0; i < ATTEMPTS; i++) {
    const { combos, text } = await readToolCombosRow(db, tool);
    const next = edit(combos);
    if (await compareAndSet(db, tool, text, next, nowIso, storedBy)) return next;
  }
  throw unavailable("the tool's extensions changed concurrently; retry");
}
