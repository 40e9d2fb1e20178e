/**
 * D1 access through statements whose values are always bound, and reads validated row by row.
 *
 * `sql` builds a fragment from a template: every `${value}` becomes a `?` placeholder with the
 * value bound, and a nested fragment is spliced in with its own values, so no value ever reaches
 * the SQL text. `d1(db)` is the same tag bound to a database, giving a statement to run.
 *
 * Failures name the statement's text and never its bound values (which may be secrets or
 * personal data): a D1 error is rethrown as `D1StatementError`, and a row that does not match its
 * schema is corrupt storage, a plain Error naming the statement and the failing fields.
 */
import { z } from "zod";
import { countD1, usageMeterOn } from "../metering/usage-meter";

/** A value D1 can bind. */
export type SqlValue = string | number | boolean | null | ArrayBuffer;

/** A piece of SQL text with the values its placeholders bind, in order. */
export class SqlFragment {
  constructor(
    readonly text: string,
    readonly values: readonly SqlValue[],
  ) {}
}

/** What a template may interpolate: a value to bind, or a fragment to splice in. */
export type SqlPart = SqlValue | SqlFragment;

/** Tags a template as SQL: values are bound as `?`, fragments are spliced with their values. */
export function sql(strings: TemplateStringsArray, ...parts: SqlPart[]): SqlFragment {
  let text = strings[0] ?? "";
  const values: SqlValue[] = [];
  parts.forEach((part, i) => {
    if (part instanceof SqlFragment) {
      text += part.text;
      values.push(...part.values);
    } else {
      text += "?";
      values.push(part);
    }
    text += strings[i + 1] ?? "";
  });
  return new SqlFragment(text, values);
}

/** Joins fragments with `separator` (a constant of the code, never a value): `IN (${join(ids.map(id => sql`${id}`))})`. */
export function join(fragments: readonly SqlFragment[], separator = ", "): SqlFragment {
  return new SqlFragment(
    fragments.map((f) => f.text).join(separator),
    fragments.flatMap((f) => f.values),
  );
}

/** One placeholder per value, comma-separated, for `IN (...)` lists. */
export function list(values: readonly SqlValue[]): SqlFragment {
  return join(values.map((v) => sql`${v}`));
}

/**
 * SQL text the code itself chose (a column or table name picked from a constant), spliced as is.
 * Never pass anything that came from a request or from storage.
 */
export function trusted(text: string): SqlFragment {
  return new SqlFragment(text, []);
}

/**
 * Column or table names the code chose, joined with ", ": for statements whose column lists follow
 * a row schema's keys (a backup section writes every column its table's schema names). Each name
 * must be a plain SQL identifier, so a name that is not one fails loudly instead of reaching SQL.
 */
export function identifiers(names: readonly string[]): SqlFragment {
  const bad = names.find((n) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
  if (bad !== undefined) throw new Error(`not a plain SQL identifier: ${JSON.stringify(bad)}`);
  return trusted(names.join(", "));
}

/** A fragment bound to the database it runs on. */
export class Statement {
  constructor(
    readonly db: D1Database,
    readonly fragment: SqlFragment,
  ) {}

  get text(): string {
    return this.fragment.text;
  }

  /** The prepared D1 statement, values bound. */
  prepared(): D1PreparedStatement {
    const p = this.db.prepare(this.fragment.text);
    return this.fragment.values.length > 0 ? p.bind(...this.fragment.values) : p;
  }
}

/** The `sql` tag for `db`: `d1(env.DB)\`SELECT … WHERE id = ${id}\``, or `d1(env.DB, fragment)`. */
export function d1(db: D1Database): (strings: TemplateStringsArray, ...parts: SqlPart[]) => Statement;
export function d1(db: D1Database, fragment: SqlFragment): Statement;
export function d1(db: D1Database, fragment?: SqlFragment) {
  if (fragment) return new Statement(db, fragment);
  return (strings: TemplateStringsArray, ...parts: SqlPart[]) => new Statement(db, sql(strings, ...parts));
}

/** A D1 failure, carrying the statement's text (never its bound values) and the D1 error as `cause`. */
export class D1StatementError extends Error {
  constructor(
    readonly statement: string,
    cause: unknown,
  ) {
    super(`${cause instanceof Error ? cause.message : String(cause)} (statement: ${statement})`, { cause });
    this.name = "D1StatementError";
  }
}

async function attempt<T>(text: string, go: () => Promise<T>): Promise<T> {
  try {
    return await go();
  } catch (err) {
    throw new D1StatementError(text, err);
  }
}

/** Checks one row against `schema`; a mismatch names the statement and the failing fields, never a value. */
function validRow<S extends z.ZodType>(schema: S, row: unknown, text: string): z.output<S> {
  const parsed = schema.safeParse(row);
  if (parsed.success) return parsed.data;
  const fields = [...new Set(parsed.error.issues.map((i) => i.path.join(".") || "(row)"))].join(", ");
  throw new Error(`a row read by "${text}" failed validation at ${fields}`);
}

/** A `SELECT COUNT(*) AS n` row. */
export const CountRow = z.object({ n: z.number() });

/** The first row, validated, or null when there is none. */
export async function first<S extends z.ZodType>(schema: S, stmt: Statement): Promise<z.output<S> | null> {
  const row = await firstRow(stmt);
  return row === null ? null : validRow(schema, row, stmt.text);
}

/**
 * The statement's first row. `first()` hands back no meta, so while the bench's usage meter is on
 * (src/platform/metering/usage-meter.ts; off in every deployment) the rows come from `all()`,
 * whose meta carries the rows D1 read and wrote.
 */
async function firstRow(stmt: Statement): Promise<Record<string, unknown> | null> {
  if (!usageMeterOn()) return attempt(stmt.text, () => stmt.prepared().first());
  const { results, meta } = await attempt(stmt.text, () => stmt.prepared().all());
  countD1(meta);
  return (results[0] as Record<string, unknown> | undefined) ?? null;
}

/** Every row, each validated. */
export async function all<S extends z.ZodType>(schema: S, stmt: Statement): Promise<z.output<S>[]> {
  const { results, meta } = await attempt(stmt.text, () => stmt.prepared().all());
  if (usageMeterOn()) countD1(meta);
  return results.map((row) => validRow(schema, row, stmt.text));
}

/** Whether the statement returns any row (its columns unread). */
export async function exists(stmt: Statement): Promise<boolean> {
  return (await firstRow(stmt)) !== null;
}

/** Runs a statement that returns no rows; resolves to D1's meta (`changes`, `last_row_id`, …). */
export async function run(stmt: Statement): Promise<D1Meta> {
  const result = await attempt(stmt.text, () => stmt.prepared().run());
  if (usageMeterOn()) countD1(result.meta);
  return result.meta;
}

/** Runs statements in one D1 batch (one transaction); a failure names every statement's text. Read rows with `rowsOf`. */
export async function batch(db: D1Database, stmts: readonly Statement[]): Promise<D1Result[]> {
  if (stmts.length === 0) return [];
  const results = await attempt(stmts.map((s) => s.text).join("; "), () => db.batch(stmts.map((s) => s.prepared())));
  if (usageMeterOn()) for (const r of results) countD1(r.meta);
  return results;
}

/** Validates the rows of a batch step (a read inside `db.batch`), naming `text` on a bad row. */
export function rowsOf<S extends z.ZodType>(schema: S, results: readonly unknown[], text: string): z.output<S>[] {
  return results.map((row) => validRow(schema, row, text));
}
