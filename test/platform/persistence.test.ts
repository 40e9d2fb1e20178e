/** The persistence kit against a real D1: bound values, typed reads, errors that name the statement and not the values. */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { D1StatementError, all, batch, d1, exists, first, list, rowsOf, run, sql, trusted } from "../../src/platform/persistence/d1";
import { jsonColumn, parseStored, validStored } from "../../src/platform/persistence/stored-json";

const TABLE = "kit_probe";
const Row = z.object({ id: z.string(), n: z.number(), doc: jsonColumn(z.object({ tags: z.array(z.string()) })) });

beforeAll(async () => {
  await env.DB.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (id TEXT PRIMARY KEY, n INTEGER, doc TEXT)`);
});

describe("sql", () => {
  it("binds every value as a placeholder and splices fragments with their values", () => {
    const where = sql`n > ${3}`;
    const q = sql`SELECT * FROM t WHERE id = ${"a'b"} AND ${where} AND k IN (${list(["x", "y"])})`;
    expect(q.text).toBe("SELECT * FROM t WHERE id = ? AND n > ? AND k IN (?, ?)");
    expect(q.values).toEqual(["a'b", 3, "x", "y"]);
  });

  it("splices only text the code chose through trusted()", () => {
    const q = sql`SELECT ${trusted("id")} FROM t WHERE id = ${"id"}`;
    expect(q.text).toBe("SELECT id FROM t WHERE id = ?");
    expect(q.values).toEqual(["id"]);
  });
});

describe("typed D1 reads", () => {
  it("binds a value full of quotes and SQL metacharacters rather than interpolating it", async () => {
    const nasty = `x'); DROP TABLE ${TABLE}; -- "quoted" %_\\`;
    await run(d1(env.DB)`INSERT OR REPLACE INTO ${trusted(TABLE)} (id, n, doc) VALUES (${nasty}, ${1}, ${'{"tags":["a"]}'})`);
    const row = await first(Row, d1(env.DB)`SELECT id, n, doc FROM ${trusted(TABLE)} WHERE id = ${nasty}`);
    expect(row).toEqual({ id: nasty, n: 1, doc: { tags: ["a"] } });
    const still = await first(z.object({ c: z.number() }), d1(env.DB)`SELECT COUNT(*) AS c FROM ${trusted(TABLE)}`);
    expect(still?.c).toBeGreaterThanOrEqual(1);
  });

  it("first gives null without a row, all gives every row validated", async () => {
    await batch(env.DB, [
      d1(env.DB)`INSERT OR REPLACE INTO ${trusted(TABLE)} (id, n, doc) VALUES (${"all-1"}, ${1}, ${'{"tags":[]}'})`,
      d1(env.DB)`INSERT OR REPLACE INTO ${trusted(TABLE)} (id, n, doc) VALUES (${"all-2"}, ${2}, ${'{"tags":["b"]}'})`,
    ]);
    expect(await first(Row, d1(env.DB)`SELECT id, n, doc FROM ${trusted(TABLE)} WHERE id = ${"none"}`)).toBeNull();
    expect(await exists(d1(env.DB)`SELECT 1 FROM ${trusted(TABLE)} WHERE id = ${"none"}`)).toBe(false);
    expect(await exists(d1(env.DB)`SELECT 1 FROM ${trusted(TABLE)} WHERE id = ${"all-1"}`)).toBe(true);
    const rows = await all(Row, d1(env.DB)`SELECT id, n, doc FROM ${trusted(TABLE)} WHERE id IN (${list(["all-1", "all-2"])}) ORDER BY n`);
    expect(rows).toEqual([
      { id: "all-1", n: 1, doc: { tags: [] } },
      { id: "all-2", n: 2, doc: { tags: ["b"] } },
    ]);
  });

  it("a bad row throws a plain Error naming the statement and the field, never the value", async () => {
    const secret = "s3cret-stored-value";
    await run(d1(env.DB)`INSERT OR REPLACE INTO ${trusted(TABLE)} (id, n, doc) VALUES (${"bad"}, ${5}, ${secret})`);
    const stmt = d1(env.DB)`SELECT id, n, doc FROM ${trusted(TABLE)} WHERE id = ${"bad"}`;
    for (const read of [() => first(Row, stmt), () => all(Row, stmt)]) {
      const err = await read().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(D1StatementError);
      const message = err instanceof Error ? err.message : "";
      expect(message).toContain(stmt.text);
      expect(message).toContain("doc");
      expect(message).not.toContain(secret);
    }
  });

  it("a D1 error carries the statement's text and not its bound values", async () => {
    const secret = "bound-secret-value";
    const stmt = d1(env.DB)`SELECT id FROM no_such_table_here WHERE id = ${secret}`;
    const err = await first(z.object({ id: z.string() }), stmt).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(D1StatementError);
    const e = err instanceof D1StatementError ? err : null;
    expect(e?.statement).toBe("SELECT id FROM no_such_table_here WHERE id = ?");
    expect(e?.message).toContain("no_such_table_here");
    expect(e?.message).not.toContain(secret);
    expect(e?.cause).toBeInstanceOf(Error);
  });

  it("a failed batch names its statements, and rowsOf validates a batch's reads", async () => {
    const secret = "batch-secret";
    const err = await batch(env.DB, [d1(env.DB)`INSERT INTO no_such_table_either (id) VALUES (${secret})`]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(D1StatementError);
    expect(err instanceof Error ? err.message : "").toContain("no_such_table_either");
    expect(err instanceof Error ? err.message : "").not.toContain(secret);
    const read = d1(env.DB)`SELECT id, n, doc FROM ${trusted(TABLE)} WHERE id = ${"all-2"}`;
    const [res] = await batch(env.DB, [read]);
    expect(rowsOf(Row, res?.results ?? [], read.text)).toEqual([{ id: "all-2", n: 2, doc: { tags: ["b"] } }]);
  });
});

describe("stored JSON", () => {
  it("parseStored names the field on invalid JSON or a bad shape, never the value", () => {
    const S = z.object({ a: z.number() });
    expect(parseStored(S, '{"a":1}', "t.col")).toEqual({ a: 1 });
    expect(() => parseStored(S, "{nope-secret", "t.col")).toThrow(/^t\.col holds invalid JSON$/);
    expect(() => parseStored(S, '{"a":"secret"}', "t.col")).toThrow(/^t\.col failed validation$/);
    expect(() => validStored(S, { a: "x" }, "t row")).toThrow(/^t row failed validation$/);
  });
});
