/**
 * A declared tool's combos in D1 (`tool_extensions`, migration 0021). Built-in tools have none and
 * a preset keeps its own in its version body, so only other tools have a row.
 */
import { type KeyWithOwner, keyColumns, parsePrefixedKey } from "../access-control/key-store";
import { storedByUserIdSql } from "../access-control/stored-by";
import { serverError } from "../platform/http/errors";
import { z } from "zod";
import { type Statement, d1, exists, first, rowsOf, run, trusted } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { type Combo, Combos } from "./combos";

/** A `tool_extensions` row with its writer's key columns (`sk_…`, `so_…`) alongside, kept for `parsePrefixedKey`. */
const Row = z.looseObject({ combos: z.string(), updated_at: z.string(), stored_by: z.string() });
const READ = "the tool_extensions read";

/** Who set a tool's combos, and that key's live record and owner (read with the combos). */
export interface CombosWriter {
  stored_by: string;
  holder: KeyWithOwner | null;
}

/** The tool's combos as stored, with the stored JSON text (for a compare-and-set write); none when absent. */
export async function readToolCombosRow(db: D1Database, tool: string): Promise<{ combos: Combo[]; text: string | null }> {
  const r = await first(Row, combosStatement(db, tool));
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
 * still run it (src/access-control/stored-by.ts).
 */
export function toolCombosStatement(db: D1Database, tool: string): D1PreparedStatement {
  return combosStatement(db, tool).prepared();
}

function combosStatement(db: D1Database, tool: string): Statement {
  return d1(db)`SELECT e.combos, e.updated_at, e.stored_by, ${trusted(keyColumns("sk", "sk_"))}, ${trusted(keyColumns("so", "so_"))}
       FROM tool_extensions e LEFT JOIN api_keys sk ON sk.user_id = ${trusted(storedByUserIdSql("e.stored_by"))} LEFT JOIN api_keys so ON so.user_id = sk.owner_user_id
       WHERE e.tool_name = ${tool}`;
}

/** The combos' writer in `toolCombosStatement`'s result (null when the tool has no row). */
export function combosWriterOf(result: D1Result): CombosWriter | null {
  const [r] = rowsOf(Row, result.results.slice(0, 1), READ);
  return r ? { stored_by: r.stored_by, holder: parsePrefixedKey(r, "sk_", "so_") } : null;
}

/** The combos in `toolCombosStatement`'s result ([] when the tool has no row). */
export function combosOf(result: D1Result): Combo[] {
  const [r] = rowsOf(Row, result.results.slice(0, 1), READ);
  return r ? parseStored(Combos, r.combos, "tool_extensions row") : [];
}

/**
 * Writes `combos` only if the row still holds `expected` (null: no row), so two concurrent edits
 * never lose one another's change: the loser re-reads and tries again. An empty list removes the
 * row. Answers false when the row changed meanwhile.
 */
async function compareAndSet(db: D1Database, tool: string, expected: string | null, combos: Combo[], nowIso: string, storedBy: string): Promise<boolean> {
  const text = JSON.stringify(combos);
  const q = d1(db);
  let stmt: Statement;
  if (expected === null) {
    if (!combos.length) return !(await exists(q`SELECT 1 AS one FROM tool_extensions WHERE tool_name = ${tool}`));
    stmt = q`INSERT INTO tool_extensions (tool_name, combos, updated_at, stored_by) VALUES (${tool}, ${text}, ${nowIso}, ${storedBy}) ON CONFLICT(tool_name) DO NOTHING`;
  } else if (!combos.length) {
    stmt = q`DELETE FROM tool_extensions WHERE tool_name = ${tool} AND combos = ${expected}`;
  } else {
    stmt = q`UPDATE tool_extensions SET combos = ${text}, updated_at = ${nowIso}, stored_by = ${storedBy} WHERE tool_name = ${tool} AND combos = ${expected}`;
  }
  return (await run(stmt)).changes > 0;
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
  throw serverError("extensions_contended", "the tool's extensions changed concurrently; retry", {
    reason: `the combos row changed under ${ATTEMPTS} compare-and-set attempts`,
    retryAfterSeconds: 1,
  });
}
