/**
 * What one backup section is (docs/backup.md): its name, whether it holds secrets, the store it
 * needs, how its rows are read for an export, how an import checks them (everything, before any
 * section writes) and how it writes them (one D1 batch per section, so a section lands whole or
 * not at all; the states go through their objects, see src/backup/sections/states.ts).
 *
 * Also the one way a section reports a bad row: a 400 naming the section, the row's index and
 * the field (`sections.routes.3.callback_url: …`), never the value.
 */
import type { z } from "zod";
import type { Principal } from "../access-control/principal";
import type { Env } from "../platform/env";
import { HttpError, badRequest } from "../platform/http/errors";
import type { StoreName } from "../platform/http/route";
import { Statement, batch } from "../platform/persistence/d1";
import type { Settings } from "../platform/settings/settings";
import type { RowOf, SectionName, SectionRows } from "./rows";

export interface ExportContext {
  env: Env;
  db: D1Database;
  settings: Settings;
}

export interface ImportContext extends ExportContext {
  /** The importing admin (routes bind their execution keys as it, like the route door). */
  principal: Principal;
  nowIso: string;
  nowMs: number;
  /** The rows of every section this import applies (a reference may point into any of them). */
  rows: SectionRows;
  /** Per-import memo for work two sections share (the settings candidate). */
  memo: Map<string, unknown>;
}

/** What an import answers per section. */
export interface SectionOutcome {
  name: SectionName;
  /** Rows written (for a secret section merged into its partner's batch: the rows it supplied). */
  applied: number;
  /** Rows left out on purpose, by index, with the reason (e.g. the importing key's own row). */
  skipped?: Array<{ index: number; reason: string }>;
  /** Callback secrets minted for api routes that came without theirs: shown here once, never again. */
  callback_secrets?: Array<{ route_name: string; callback_secret: string }>;
}

export type Applied = Omit<SectionOutcome, "name">;

export interface BackupSection<N extends SectionName, Plan = Array<RowOf<N>>> {
  name: N;
  /** Secret sections are exported only when named, and never leak into a non-secret one. */
  secret: boolean;
  description: string;
  /** The store the section's data lives in; without it the section answers 501 `<store>-not-configured`. */
  store?: StoreName;
  exportRows(ctx: ExportContext): Promise<Array<RowOf<N>>>;
  /** Every rule a row must meet, reading the deployment but writing nothing; 400 on the first broken one. */
  validate(rows: Array<RowOf<N>>, ctx: ImportContext): Promise<Plan>;
  /** Writes the plan (one D1 batch, or through the objects for states). */
  apply(plan: Plan, ctx: ImportContext): Promise<Applied>;
}

/** Any section, for the registry's list (the plan type is each section's own business). */
export type AnySection = BackupSection<SectionName, unknown>;

/** Declares a section with its row and plan types checked. */
export function defineSection<N extends SectionName, Plan>(section: BackupSection<N, Plan>): BackupSection<N, Plan> {
  return section;
}

/** Where a row is, as a message names it: `sections.<name>.<index>`. */
export function rowPath(section: SectionName, index: number, field?: string): string {
  return `sections.${section}.${index}${field ? `.${field}` : ""}`;
}

/** The 400 for a broken row: names the section, the row index and the field, never the value. */
export function rowFault(section: SectionName, index: number, field: string | null, problem: string): HttpError {
  return badRequest(`invalid document: ${rowPath(section, index, field ?? undefined)}: ${problem}`);
}

/**
 * Runs a door's own check on one row and reports its refusal at the row: a 4xx from the check
 * (a door answers 404 for a missing target, 409 for a taken name) becomes the import's 400, with
 * the door's "invalid body: " prefix replaced by the row's place. A 501 (a store or key not
 * configured) and anything else pass through.
 */
export async function atRow<T>(section: SectionName, index: number, check: () => T | Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    if (err instanceof HttpError && err.status >= 400 && err.status < 500) {
      throw rowFault(section, index, null, err.message.replace(/^invalid body: /, ""));
    }
    throw err;
  }
}

/**
 * Runs one row's write step (an object call, the doors' own apply-time checks) and names the row
 * in a refusal, keeping the door's status: a state's object refusing a narrowing re-declare is
 * still a 409. Used only while applying, after every section validated.
 */
export async function inRow<T>(section: SectionName, index: number, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof HttpError && err.status >= 400 && err.status < 500) {
      throw new HttpError(err.status, `${rowPath(section, index)}: ${err.message.replace(/^invalid body: /, "")}`, err.code, err.extra, err.headers);
    }
    throw err;
  }
}

/** Parses `value` with a door's schema, or the 400 naming the row and the failing fields. */
export function parseAtRow<S extends z.ZodType>(section: SectionName, index: number, field: string | null, schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const parts = result.error.issues.slice(0, 3).map((issue) => {
    const path = [field, ...issue.path.map(String)].filter((p) => p !== null && p !== "").join(".");
    return `${rowPath(section, index, path || undefined)}: ${issue.message}`;
  });
  throw badRequest(`invalid document: ${parts.join("; ")}`);
}

/** The first index whose key repeats an earlier row's, or -1. */
export function firstDuplicate<T>(rows: readonly T[], key: (row: T) => string): number {
  const seen = new Set<string>();
  for (const [i, row] of rows.entries()) {
    const k = key(row);
    if (seen.has(k)) return i;
    seen.add(k);
  }
  return -1;
}

/** Refuses a section whose rows repeat a natural key (which one would win is not the import's to guess). */
export function refuseDuplicates<T>(section: SectionName, rows: readonly T[], key: (row: T) => string, what: string): void {
  const i = firstDuplicate(rows, key);
  if (i >= 0) throw rowFault(section, i, null, `repeats the ${what} of an earlier row`);
}

/**
 * Runs a section's statements as one D1 batch (one transaction); an empty plan writes nothing.
 * Some stores a section writes through still hand over D1's own prepared statements: a plan made
 * only of tagged statements runs through the kit, so a failure names their text; a plan holding a
 * prepared one runs in the same single batch, its failure as D1 gives it.
 */
export async function runBatch(db: D1Database, statements: ReadonlyArray<Statement | D1PreparedStatement>): Promise<void> {
  if (statements.every((s): s is Statement => s instanceof Statement)) {
    await batch(db, statements);
    return;
  }
  await db.batch(statements.map((s) => (s instanceof Statement ? s.prepared() : s)));
}

/** An import that stopped partway: the sections written before it stay, and the answer lists them. */
export function stoppedAt(section: SectionName, err: unknown, applied: SectionOutcome[]): unknown {
  if (err instanceof HttpError) {
    return new HttpError(
      err.status,
      `import stopped at section ${section} (earlier sections were applied): ${err.message}`,
      err.code,
      { ...(err.extra ?? {}), applied },
      err.headers,
      err.reason,
    );
  }
  return err;
}
