/**
 * One way per object, kept by reading the sources: every object statement goes through the
 * `objectSql` tag (src/platform/persistence/object-sql.ts), every Durable Object shell starts through
 * `startObject` (src/platform/persistence/object-start.ts), and every shell reads time from a Clock
 * (src/platform/clock.ts). docs/architecture.md, "Object schemas", states the rules; a new file is
 * checked the moment it exists.
 */
/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";

const SOURCES = import.meta.glob(["../../src/**/*.ts", "../../durable-objects/*.ts"], { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;
const SHELLS = Object.entries(SOURCES).filter(([path]) => path.startsWith("../../durable-objects/"));
/** The kit: the only place that calls SQLite's `exec`. */
const KIT = "../../src/platform/persistence/";

/** Lines that run object SQL around the tag: `sql.exec(…)`, `execStatement(…)`, or `exec` handed a statement literal. */
const RAW_SQL = [
  /\bsql\.exec\s*[<(]/,
  /\bexecStatement\s*[<(]/,
  /\.exec\s*(<[^>()]*>)?\(\s*["'`]\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|REPLACE|WITH|PRAGMA)\b/i,
];

function hits(source: string, patterns: RegExp[]): string[] {
  return source.split("\n").flatMap((line, i) => (patterns.some((p) => p.test(line)) ? [`${i + 1}: ${line.trim()}`] : []));
}

describe("one way per object", () => {
  it("reads the sources", () => {
    expect(Object.keys(SOURCES).length).toBeGreaterThan(100);
    expect(SHELLS.length).toBeGreaterThan(10);
  });

  it("runs every object statement through the objectSql tag: no sql.exec or execStatement outside the kit", () => {
    const found = Object.entries(SOURCES)
      .filter(([path]) => !path.startsWith(KIT))
      .flatMap(([path, source]) => hits(source, RAW_SQL).map((h) => `${path}:${h}`));
    expect(found).toEqual([]);
  });

  it("starts every shell with storage through startObject, never blockConcurrencyWhile by hand", () => {
    const found = SHELLS.flatMap(([path, source]) => {
      const uses = /\bctx\.storage\b|\bthis\.ctx\.storage\b/.test(source);
      const problems: string[] = [];
      if (uses && !/\bstartObject\(ctx,/.test(source)) problems.push(`${path}: uses its storage but does not call startObject(ctx, …)`);
      if (/\bblockConcurrencyWhile\b/.test(source)) problems.push(`${path}: calls blockConcurrencyWhile itself`);
      return problems;
    });
    expect(found).toEqual([]);
  });

  it("reads time in every shell from the injected Clock, never Date.now()", () => {
    const found = SHELLS.flatMap(([path, source]) => hits(source, [/\bDate\.now\s*\(/]).map((h) => `${path}:${h}`));
    expect(found).toEqual([]);
  });
});
