import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  ObjectSqlError,
  keyValueVersionRow,
  migrateSchema,
  objectSql,
  schemaVersion,
  sqlJoin,
  sqlList,
  sqlPart,
  sqlText,
  tableExists,
} from "../../src/platform/persistence/object-sql";

/** A scratch object: MarketplaceLock's storage holds one small table, so test tables stay apart from it. */
function scratch() {
  return env.MARKETPLACE_LOCK.get(env.MARKETPLACE_LOCK.idFromName(crypto.randomUUID()));
}

describe("the tagged sql template", () => {
  it("binds every interpolated value as a parameter", async () => {
    const rows = await runInDurableObject(scratch(), (_o, state) => {
      const q = objectSql(state.storage.sql, "scratch");
      q.run`CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)`;
      const hostile = "x'); DROP TABLE t; --";
      expect(q.run`INSERT INTO t (k, v) VALUES (${"a"}, ${hostile})`).toBeGreaterThan(0);
      expect(q.one<{ v: string }>`SELECT v FROM t WHERE k = ${"a"}`).toEqual({ v: hostile });
      expect(q.one`SELECT v FROM t WHERE k = ${"missing"}`).toBeNull();
      return q<{ k: string }>`SELECT k FROM t`;
    });
    expect(rows).toEqual([{ k: "a" }]);
  });

  it("names the store and the statement in its errors, never the values", async () => {
    const err = await runInDurableObject(scratch(), (_o, state) => {
      const q = objectSql(state.storage.sql, "scratch");
      try {
        q`SELECT v FROM nowhere WHERE k = ${"secret-value"}`;
      } catch (e) {
        return e;
      }
      return null;
    });
    expect(err).toBeInstanceOf(ObjectSqlError);
    const e = err as ObjectSqlError;
    expect(e.store).toBe("scratch");
    expect(e.statement).toBe("SELECT v FROM nowhere WHERE k = ?");
    expect(e.message).toContain("scratch sql failed");
    expect(e.message).toContain("SELECT v FROM nowhere WHERE k = ?");
    expect(e.message).not.toContain("secret-value");
  });

  it("splices the code's own fragments as text and binds their values in order", async () => {
    const out = await runInDurableObject(scratch(), (_o, state) => {
      const q = objectSql(state.storage.sql, "scratch");
      q.run`CREATE TABLE f (k TEXT PRIMARY KEY, a TEXT, b INTEGER)`;
      q.run`INSERT INTO f (k, a, b) VALUES (${sqlList(["x", "a'); DROP TABLE f; --", 1])})`;
      const sets = [sqlPart`${sqlText("a")} = ${"a2"}`, sqlPart`b = ${2}`];
      const written = q.run`UPDATE f SET ${sqlJoin(sets, ", ")} WHERE k = ${"x"}`;
      const rows = q`SELECT ${sqlText("k, a, b")} FROM f WHERE k IN (${sqlList(["x", "y"])})`;
      let statement = "";
      try {
        q`SELECT ${sqlText("a")} FROM nowhere WHERE k IN (${sqlList(["secret-1", "secret-2"])}) AND ${sqlPart`b = ${"secret-3"}`}`;
      } catch (e) {
        statement = (e as ObjectSqlError).statement;
      }
      return { written, rows, statement };
    });
    expect(out.written).toBe(1);
    expect(out.rows).toEqual([{ k: "x", a: "a2", b: 2 }]);
    expect(out.statement).toBe("SELECT a FROM nowhere WHERE k IN (?, ?) AND b = ?");
  });
});

describe("migrateSchema", () => {
  const steps = [
    ["CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"],
    ["ALTER TABLE notes ADD COLUMN tag TEXT"],
    (sql: SqlStorage) => {
      sql.exec("UPDATE notes SET tag = 'old' WHERE tag IS NULL");
    },
  ];

  it("creates a new store at the current version and is idempotent", async () => {
    const out = await runInDurableObject(scratch(), (_o, state) => {
      const sql = state.storage.sql;
      expect(migrateSchema(sql, { name: "notes", steps })).toBe(3);
      expect(migrateSchema(sql, { name: "notes", steps })).toBe(3);
      sql.exec("INSERT INTO notes (body, tag) VALUES ('b', 't')");
      return { version: schemaVersion(sql, "notes"), rows: sql.exec("SELECT body, tag FROM notes").toArray() };
    });
    expect(out).toEqual({ version: 3, rows: [{ body: "b", tag: "t" }] });
  });

  it("runs only the steps after the stored version, in order", async () => {
    const out = await runInDurableObject(scratch(), (_o, state) => {
      const sql = state.storage.sql;
      migrateSchema(sql, { name: "notes", steps: steps.slice(0, 1) });
      sql.exec("INSERT INTO notes (body) VALUES ('kept')");
      migrateSchema(sql, { name: "notes", steps });
      return { version: schemaVersion(sql, "notes"), rows: sql.exec("SELECT body, tag FROM notes").toArray() };
    });
    expect(out).toEqual({ version: 3, rows: [{ body: "kept", tag: "old" }] });
  });

  it("adopts an unversioned store at the version its shape shows, keeping its rows", async () => {
    const out = await runInDurableObject(scratch(), (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
      sql.exec("INSERT INTO notes (body) VALUES ('legacy')");
      const adopt = (s: SqlStorage) => (tableExists(s, "notes") ? 1 : 0);
      migrateSchema(sql, { name: "notes", steps, adopt });
      return { version: schemaVersion(sql, "notes"), rows: sql.exec("SELECT body, tag FROM notes").toArray() };
    });
    expect(out).toEqual({ version: 3, rows: [{ body: "legacy", tag: "old" }] });
  });

  it("keeps one version row per store, and leaves a version newer than its steps as it is", async () => {
    const out = await runInDurableObject(scratch(), (_o, state) => {
      const sql = state.storage.sql;
      migrateSchema(sql, { name: "notes", steps });
      migrateSchema(sql, { name: "other", steps: [["CREATE TABLE IF NOT EXISTS other (x INTEGER)"]] });
      const older = migrateSchema(sql, { name: "notes", steps: steps.slice(0, 2) });
      return { rows: sql.exec("SELECT name, version FROM _schema WHERE name IN ('notes', 'other') ORDER BY name").toArray(), older };
    });
    expect(out.rows).toEqual([
      { name: "notes", version: 3 },
      { name: "other", version: 1 },
    ]);
    expect(out.older).toBe(3);
  });

  it("a failing step names the store and leaves the version at the last step that ran", async () => {
    const out = await runInDurableObject(scratch(), (_o, state) => {
      const sql = state.storage.sql;
      let store = "";
      try {
        migrateSchema(sql, { name: "broken", steps: [["CREATE TABLE IF NOT EXISTS b (x INTEGER)"], ["ALTER TABLE missing ADD COLUMN y TEXT"]] });
      } catch (e) {
        store = e instanceof ObjectSqlError ? `${e.store}: ${e.statement}` : "";
      }
      return { store, version: schemaVersion(sql, "broken") };
    });
    expect(out).toEqual({ store: "broken: ALTER TABLE missing ADD COLUMN y TEXT", version: 1 });
  });

  it("keeps a store's version in its own key/value table when told to, and no _schema row", async () => {
    const out = await runInDurableObject(scratch(), (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      sql.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
      sql.exec("INSERT INTO kv (key, value) VALUES ('notes_version', '1')");
      migrateSchema(sql, { name: "notes", steps, versionRow: keyValueVersionRow("kv", "notes_version") });
      return {
        kv: sql.exec("SELECT value FROM kv WHERE key = 'notes_version'").one(),
        columns: sql.exec("SELECT * FROM notes LIMIT 0").columnNames,
        schemaRow: schemaVersion(sql, "notes"),
      };
    });
    expect(out).toEqual({ kv: { value: "3" }, columns: ["id", "body", "tag"], schemaRow: null });
  });
});
