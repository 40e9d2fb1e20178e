/**
 * The Durable Objects' SQLite kit: a tagged `sql` template that binds its parameters and names the
 * failing statement, and a versioned schema whose version lives in one `_schema` row per store, so
 * every object brings its tables from whatever version it was last written at to the current one.
 *
 * Everything here is synchronous, as DO SQLite is: a migration run without an `await` in between is
 * committed as one write by the object's implicit transaction, so a step and its version row land
 * together or not at all.
 */
import { countObjectRows, usageMeterOn } from "../metering/usage-meter";

/** One row as SQLite hands it back. */
export type SqlRow = Record<string, SqlStorageValue>;

/** A statement that failed: the store and the statement text, never the bound values (they may be user data). */
export class ObjectSqlError extends Error {
  constructor(
    readonly store: string,
    readonly statement: string,
    cause: unknown,
  ) {
    super(`${store} sql failed: ${cause instanceof Error ? cause.message : String(cause)} (statement: ${statement})`, { cause });
    this.name = "ObjectSqlError";
  }
}

/**
 * Runs one statement with its values bound; a failure is rethrown as an ObjectSqlError naming it.
 * The kit's own door to `sql.exec`: outside this folder statements go through the `objectSql` tag
 * (test/platform/one-way-per-object.test.ts keeps it so).
 */
export function execStatement<T extends SqlRow = SqlRow>(
  sql: SqlStorage,
  store: string,
  statement: string,
  values: readonly SqlStorageValue[] = [],
): SqlResult<T> {
  try {
    const cursor = sql.exec<T>(statement, ...values);
    const rows = cursor.toArray();
    // The bench's usage meter (off in every deployment): the rows SQLite read and wrote, as billed.
    if (usageMeterOn()) countObjectRows(store, statement, cursor.rowsRead, cursor.rowsWritten);
    return { rows, rowsWritten: cursor.rowsWritten };
  } catch (err) {
    throw new ObjectSqlError(store, statement, err);
  }
}

/** What a statement answered, read to the end so that a failure surfaces inside the call. */
export interface SqlResult<T extends SqlRow> {
  rows: T[];
  rowsWritten: number;
}

/**
 * A piece of statement text that the code itself chose (a column list, an `ORDER BY` direction, a
 * `SET` list), with the values it binds: spliced into a statement as text, never taken from a value.
 */
export class SqlFragment {
  constructor(
    readonly text: string,
    readonly values: readonly SqlStorageValue[] = [],
  ) {}
}

/** Statement text the code chose, never text from outside: `q\`SELECT ${sqlText(COLUMNS)} FROM run\``. */
export function sqlText(text: string): SqlFragment {
  return new SqlFragment(text);
}

/** A fragment with its own bound values, to splice into a statement: `sqlPart\`status = ${status}\``. */
export function sqlPart(strings: TemplateStringsArray, ...values: SqlValue[]): SqlFragment {
  return compose(strings, values);
}

/** Fragments joined by `separator` (a `SET` list, an `IN` list). */
export function sqlJoin(parts: readonly SqlFragment[], separator: string): SqlFragment {
  return new SqlFragment(
    parts.map((p) => p.text).join(separator),
    parts.flatMap((p) => p.values),
  );
}

/** Values bound by position, as `?, ?, …` (an `IN` list, a `VALUES` row given as one list). */
export function sqlList(values: readonly SqlStorageValue[]): SqlFragment {
  return new SqlFragment(values.map(() => "?").join(", "), values);
}

/** What a template may interpolate: a value, bound as `?`, or a fragment of the code's own text. */
export type SqlValue = SqlStorageValue | SqlFragment;

/** A template's statement text and bound values: each value becomes a `?`, each fragment its text. */
function compose(strings: TemplateStringsArray, values: readonly SqlValue[]): SqlFragment {
  let text = strings[0];
  const bound: SqlStorageValue[] = [];
  values.forEach((value, i) => {
    if (value instanceof SqlFragment) {
      text += value.text;
      bound.push(...value.values);
    } else {
      text += "?";
      bound.push(value);
    }
    text += strings[i + 1];
  });
  return new SqlFragment(text, bound);
}

/**
 * The tagged template over one store's SQLite: each `${value}` becomes a bound `?`, never text (a
 * `SqlFragment` from `sqlText`/`sqlPart`/`sqlJoin` is the code's own text, spliced in as such).
 *
 *     const q = objectSql(ctx.storage.sql, "ledger");
 *     const rows = q<{ key: string }>`SELECT key FROM ledger WHERE thread_id = ${threadId}`;
 *     q.one<{ n: number }>`SELECT COUNT(*) AS n FROM ledger`;
 *     q.run`DELETE FROM ledger WHERE expires_at <= ${nowMs}`; // rows written
 */
export interface ObjectSql {
  <T extends SqlRow = SqlRow>(strings: TemplateStringsArray, ...values: SqlValue[]): T[];
  /** The first row, or null. */
  one<T extends SqlRow = SqlRow>(strings: TemplateStringsArray, ...values: SqlValue[]): T | null;
  /** Runs a write; answers the rows it wrote. */
  run(strings: TemplateStringsArray, ...values: SqlValue[]): number;
  /** The storage underneath. */
  readonly storage: SqlStorage;
  readonly store: string;
}

/** The statement text of a template: its literal parts joined by placeholders. */
export function statementOf(strings: TemplateStringsArray): string {
  return strings.join("?");
}

/** The tag over `sql`, naming `store` (with the statement's text) in its errors. */
export function objectSql(sql: SqlStorage, store: string): ObjectSql {
  const exec = <T extends SqlRow>(strings: TemplateStringsArray, values: readonly SqlValue[]): SqlResult<T> => {
    const statement = compose(strings, values);
    return execStatement<T>(sql, store, statement.text, statement.values);
  };
  const rows = <T extends SqlRow = SqlRow>(strings: TemplateStringsArray, ...values: SqlValue[]): T[] => exec<T>(strings, values).rows;
  return Object.assign(rows, {
    one: <T extends SqlRow = SqlRow>(strings: TemplateStringsArray, ...values: SqlValue[]): T | null => exec<T>(strings, values).rows[0] ?? null,
    run: (strings: TemplateStringsArray, ...values: SqlValue[]): number => exec(strings, values).rowsWritten,
    storage: sql,
    store,
  });
}

/**
 * One migration step: the statements it runs in order, or a function for a step that must look
 * before it writes. Step `i` (0-based) brings the store from version `i` to version `i + 1`.
 */
export type MigrationStep = readonly string[] | ((sql: SqlStorage) => void);

export interface ObjectSchema {
  /** The store's name: its key in `_schema` and the name in its errors. Unique within one object. */
  name: string;
  steps: readonly MigrationStep[];
  /**
   * For a store that the code wrote before it had a version row: the version its tables stand at,
   * read once from their shape (0 when there is nothing to adopt). Without it an unversioned store
   * counts as version 0, which suits a store whose first step only creates what is missing
   * (`IF NOT EXISTS`): rerunning it over the old tables keeps them and their rows.
   */
  adopt?: (sql: SqlStorage) => number;
  /** Where the version is kept; the store's `_schema` row unless the store had a version row of its own before this kit. */
  versionRow?: VersionRow;
}

/** Reads and writes one store's version (null: no row yet). */
export interface VersionRow {
  read(sql: SqlStorage): number | null;
  write(sql: SqlStorage, version: number): void;
}

/** The default: the store's row in `_schema`. */
function schemaRow(name: string): VersionRow {
  return {
    read: (sql) => schemaVersion(sql, name),
    write: (sql, version) => {
      execStatement(sql, VERSION_TABLE, `CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (name TEXT PRIMARY KEY, version INTEGER NOT NULL)`);
      execStatement(
        sql,
        VERSION_TABLE,
        `INSERT INTO ${VERSION_TABLE} (name, version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET version = excluded.version`,
        [name, version],
      );
    },
  };
}

/**
 * A version kept as text under `key` in a key/value table `(key TEXT PRIMARY KEY, value TEXT NOT
 * NULL)`: for a store that versioned itself that way before this kit, so its objects keep their
 * version where it already is and need no adoption.
 */
export function keyValueVersionRow(table: string, key: string): VersionRow {
  return {
    read: (sql) => {
      if (!tableExists(sql, table)) return null;
      const row = execStatement<{ value: string }>(sql, table, `SELECT value FROM ${table} WHERE key = ?`, [key]).rows[0];
      return row ? Number(row.value) : null;
    },
    write: (sql, version) => {
      execStatement(sql, table, `CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
      execStatement(sql, table, `INSERT OR REPLACE INTO ${table} (key, value) VALUES (?, ?)`, [key, String(version)]);
    },
  };
}

const VERSION_TABLE = "_schema";

/** The version recorded for a store, or null when it has no version row (new, or written before versions). */
export function schemaVersion(sql: SqlStorage, name: string): number | null {
  if (!tableExists(sql, VERSION_TABLE)) return null;
  const row = execStatement<{ version: number }>(sql, VERSION_TABLE, `SELECT version FROM ${VERSION_TABLE} WHERE name = ?`, [name]).rows[0];
  return row ? Number(row.version) : null;
}

/**
 * Brings one store to its current version (the number of its steps) and answers that version.
 * Idempotent: a store already current costs one read. Run it once per instance before any read,
 * as the shell's `startObject` migration (object-start.ts), or, for a store created on its first
 * write, before that write.
 * A store at a version newer than this code knows (a rolled-back deploy) is left as it is and its
 * version answered: steps only add, so the older code still finds what it reads, and the newer code
 * does not rerun its steps when it returns.
 */
export function migrateSchema(sql: SqlStorage, schema: ObjectSchema): number {
  const target = schema.steps.length;
  const row = schema.versionRow ?? schemaRow(schema.name);
  let version = row.read(sql);
  if (version === target) return target;
  if (version === null) version = schema.adopt ? schema.adopt(sql) : 0;
  if (version > target) return version;
  for (let i = version; i < target; i++) {
    const step = schema.steps[i];
    try {
      if (typeof step === "function") step(sql);
      else for (const statement of step) execStatement(sql, schema.name, statement);
    } catch (err) {
      if (err instanceof ObjectSqlError) throw err;
      throw new ObjectSqlError(schema.name, `migration step ${i + 1}`, err);
    }
    // Recorded after each step, so a later step that fails leaves the store at a version it truly has.
    row.write(sql, i + 1);
  }
  // An adopted store already current still gets its row, so its shape is never read again.
  if (version === target) row.write(sql, target);
  return target;
}

/** Whether a table of that name exists: the usual test an adopter makes of an unversioned store. */
export function tableExists(sql: SqlStorage, table: string): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table).toArray().length > 0;
}

/** The column names of a table (empty when it does not exist). */
export function columnsOf(sql: SqlStorage, table: string): string[] {
  if (!tableExists(sql, table)) return [];
  return sql.exec(`SELECT * FROM "${table.replaceAll('"', '""')}" LIMIT 0`).columnNames;
}
