import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject, JsonValue } from "../../src/platform/http/bounded-json";
import {
  type ApplyResult,
  DeltaBatch,
  DeltaOp,
  MAX_KEYED_ITEMS,
  MAX_OPS,
  MAX_PATH_SEGMENTS,
  type Regime,
  Regime as RegimeSchema,
  applyOps,
} from "../../src/states/ops";
import { must } from "../../src/platform/must";

/** A value no error message may ever contain. */
const SECRET = "s3cr3t-Zq81x";

/** The successful result, or a failure that names what went wrong. */
function ok(r: ApplyResult) {
  if (!r.ok) throw new Error(`expected ok, got ${r.kind}: ${r.error}`);
  return r;
}
function refused(r: ApplyResult) {
  if (r.ok) throw new Error(`expected a refusal, got ${JSON.stringify(r.doc)}`);
  return r;
}
/** Ops that did not go through the schema, as an RPC caller could hand them. */
const unchecked = (ops: unknown[]) => ops as DeltaOp[];

/** Reads `path` with own keys only, the way the module addresses documents. */
function readAt(doc: JsonValue, path: Array<string | number>): JsonValue | undefined {
  let cur: JsonValue | undefined = doc;
  for (const seg of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    if (Array.isArray(cur)) cur = typeof seg === "number" ? cur[seg] : undefined;
    else cur = typeof seg === "string" && Object.hasOwn(cur, seg) ? cur[seg] : undefined;
  }
  return cur;
}

/** Every message of a zod failure, joined, to look for echoed input. */
function issueText(
  value: unknown,
  schema: { safeParse: (v: unknown) => { success: boolean; error?: { issues: Array<{ message: string; path: PropertyKey[] }> } } },
) {
  const r = schema.safeParse(value);
  expect(r.success).toBe(false);
  return must(r.error, "r.error")
    .issues.map((i) => `${i.path.map(String).join(".")}: ${i.message}`)
    .join("; ");
}

describe("delta op schemas", () => {
  it("parse every op", () => {
    const ops = [
      { op: "set", path: ["a", 0, "b"], value: { x: [1, null] } },
      { op: "set", path: ["list", "-"], value: 1 },
      { op: "set", path: [], value: {} },
      { op: "remove", path: ["a"] },
      { op: "set_by_key", path: ["l"], key: "id", items: [{ id: "a" }, { id: 2 }] },
      { op: "merge_by_key", path: ["l"], key: "id", items: [{ id: -3, n: 1 }] },
      { op: "remove_by_key", path: ["l"], key: "id", keys: ["a", 2] },
      { op: "unset_by_key", path: ["l"], key: "id", keys: [1], fields: ["n"] },
      { op: "set_by_key_each", path: ["l"], key: "id", keys: [1], field: "n", value: false },
    ];
    for (const op of ops) expect(DeltaOp.safeParse(op).success, JSON.stringify(op)).toBe(true);
    expect(DeltaBatch.parse({ ops, op_id: "  abc  " }).op_id).toBe("abc");
  });

  it("refuse unknown ops and extra fields, without quoting the field name", () => {
    expect(DeltaOp.safeParse({ op: "patch", path: ["a"] }).success).toBe(false);
    expect(issueText({ op: "set", path: ["a"], value: 1, [SECRET]: 1 }, DeltaOp)).not.toContain(SECRET);
    expect(issueText({ op: "remove", path: ["a"], value: 1 }, DeltaOp)).toContain("does not take");
    expect(DeltaBatch.safeParse({ ops: [], extra: 1 }).success).toBe(false);
    expect(RegimeSchema.safeParse({ path: ["a"], regime: "composing", extra: 1 }).success).toBe(false);
    expect(RegimeSchema.safeParse({ path: ["a"], regime: "other" }).success).toBe(false);
  });

  it("cap paths at 128 segments, batches at 1000 ops, keyed payloads at 200 entries", () => {
    const path = (n: number) => Array.from({ length: n }, (_, i) => `k${i}`);
    expect(MAX_PATH_SEGMENTS).toBe(128);
    expect(MAX_OPS).toBe(1000);
    expect(MAX_KEYED_ITEMS).toBe(200);
    expect(DeltaOp.safeParse({ op: "set", path: path(128), value: 1 }).success).toBe(true);
    expect(DeltaOp.safeParse({ op: "set", path: path(129), value: 1 }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "remove", path: path(129) }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "remove_by_key", path: path(129), key: "id", keys: [] }).success).toBe(false);

    const op = { op: "remove", path: ["a"] };
    expect(DeltaBatch.safeParse({ ops: Array(1000).fill(op) }).success).toBe(true);
    expect(DeltaBatch.safeParse({ ops: Array(1001).fill(op) }).success).toBe(false);

    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i }));
    const keys = (n: number) => Array.from({ length: n }, (_, i) => i);
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `f${i}`);
    for (const name of ["set_by_key", "merge_by_key"]) {
      expect(DeltaOp.safeParse({ op: name, path: ["l"], key: "id", items: items(200) }).success).toBe(true);
      expect(DeltaOp.safeParse({ op: name, path: ["l"], key: "id", items: items(201) }).success).toBe(false);
    }
    expect(DeltaOp.safeParse({ op: "remove_by_key", path: ["l"], key: "id", keys: keys(200) }).success).toBe(true);
    expect(DeltaOp.safeParse({ op: "remove_by_key", path: ["l"], key: "id", keys: keys(201) }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "set_by_key_each", path: ["l"], key: "id", keys: keys(201), field: "f", value: 1 }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "unset_by_key", path: ["l"], key: "id", keys: keys(201), fields: ["f"] }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "unset_by_key", path: ["l"], key: "id", keys: [1], fields: fields(200) }).success).toBe(true);
    expect(DeltaOp.safeParse({ op: "unset_by_key", path: ["l"], key: "id", keys: [1], fields: fields(201) }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "unset_by_key", path: ["l"], key: "id", keys: [1], fields: [] }).success).toBe(false);
  });

  it('allow "-" only as the last segment of a set', () => {
    expect(DeltaOp.safeParse({ op: "set", path: ["l", "-"], value: 1 }).success).toBe(true);
    expect(issueText({ op: "set", path: ["l", "-", "x"], value: 1 }, DeltaOp)).toContain("path.1");
    expect(DeltaOp.safeParse({ op: "remove", path: ["l", "-"] }).success).toBe(false);
    for (const name of ["remove_by_key", "unset_by_key", "set_by_key_each"]) {
      expect(DeltaOp.safeParse({ op: name, path: ["l", "-"], key: "id", keys: [], fields: ["f"], field: "f", value: 1 }).success).toBe(false);
    }
    for (const name of ["set_by_key", "merge_by_key"]) {
      expect(DeltaOp.safeParse({ op: name, path: ["-"], key: "id", items: [] }).success).toBe(false);
    }
  });

  it("refuse malformed segments, the root where it cannot work, and missing values", () => {
    for (const seg of [-1, 1.5, true, null, {}]) expect(DeltaOp.safeParse({ op: "set", path: [seg], value: 1 }).success, String(seg)).toBe(false);
    expect(DeltaOp.safeParse({ op: "remove", path: [] }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "set_by_key", path: [], key: "id", items: [] }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "set", path: [], value: [1] }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "set", path: [], value: "x" }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "set", path: ["a"] }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "set", path: ["a"], value: null }).success).toBe(true);
    expect(DeltaOp.safeParse({ op: "set_by_key_each", path: ["l"], key: "id", keys: [], field: "f" }).success).toBe(false);
  });

  it("check keys, items and fields of keyed ops", () => {
    const base = { path: ["l"], key: "id" };
    expect(DeltaOp.safeParse({ op: "set_by_key", ...base, key: "", items: [] }).success).toBe(false);
    expect(issueText({ op: "set_by_key", ...base, items: [{ id: 1 }, "x"] }, DeltaOp)).toContain("items.1");
    expect(DeltaOp.safeParse({ op: "set_by_key", ...base, items: [[{ id: 1 }]] }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "set_by_key", ...base, items: [null] }).success).toBe(false);
    for (const id of [1.5, true, null, { a: 1 }, [1]]) {
      expect(issueText({ op: "merge_by_key", ...base, items: [{ id: 1 }, { id }] }, DeltaOp)).toContain("items.1");
    }
    expect(issueText({ op: "set_by_key", ...base, items: [{ other: SECRET }] }, DeltaOp)).not.toContain(SECRET);
    for (const k of [1.5, true, null, {}]) expect(DeltaOp.safeParse({ op: "remove_by_key", ...base, keys: [k] }).success).toBe(false);
    expect(DeltaOp.safeParse({ op: "remove_by_key", ...base, keys: ["", 0, -7] }).success).toBe(true);
    expect(issueText({ op: "unset_by_key", ...base, keys: [1], fields: ["x", "id"] }, DeltaOp)).toContain("fields.1");
    expect(issueText({ op: "set_by_key_each", ...base, keys: [1], field: "id", value: 1 }, DeltaOp)).toContain("field");
  });

  it("DeltaBatch takes an optional, trimmed, non-blank op_id of at most 256 characters", () => {
    expect(DeltaBatch.safeParse({ ops: [] }).success).toBe(true);
    expect(DeltaBatch.safeParse({ ops: [], op_id: "   " }).success).toBe(false);
    expect(DeltaBatch.safeParse({ ops: [], op_id: "x".repeat(256) }).success).toBe(true);
    expect(DeltaBatch.safeParse({ ops: [], op_id: "x".repeat(257) }).success).toBe(false);
  });
});

describe("set", () => {
  it("writes a top-level key, overwrites, and creates missing intermediate objects", () => {
    const r = ok(
      applyOps({ a: 1, keep: true }, [
        { op: "set", path: ["a"], value: 2 },
        { op: "set", path: ["x", "y", "z"], value: "deep" },
        { op: "set", path: ["x", "y", "w"], value: null },
      ]),
    );
    expect(r.doc).toEqual({ a: 2, keep: true, x: { y: { z: "deep", w: null } } });
    expect(r.skipped).toEqual([]);
    expect(r.paths).toEqual([["a"], ["x", "y", "z"], ["x", "y", "w"]]);
  });

  it('appends with "-" and with an index equal to the length; replaces at an existing index', () => {
    const r = ok(
      applyOps({ l: [1, 2] }, [
        { op: "set", path: ["l", "-"], value: 3 },
        { op: "set", path: ["l", 3], value: 4 },
        { op: "set", path: ["l", 0], value: 0 },
      ]),
    );
    expect(r.doc).toEqual({ l: [0, 2, 3, 4] });
    expect(r.paths).toEqual([
      ["l", "-"],
      ["l", 3],
      ["l", 0],
    ]);
  });

  it("walks through array elements into objects", () => {
    const r = ok(applyOps({ l: [{ n: 1 }] }, [{ op: "set", path: ["l", 0, "m", "k"], value: 2 }]));
    expect(r.doc).toEqual({ l: [{ n: 1, m: { k: 2 } }] });
  });

  it("refuses an index past the length, or an index into a missing container", () => {
    expect(refused(applyOps({ l: [1] }, [{ op: "set", path: ["l", 2], value: 1 }])).error).toMatch(/^op 0 \(set\): path\[1\] is past the end/);
    const missing = refused(applyOps({}, [{ op: "set", path: ["l", 0], value: 1 }]));
    expect(missing.kind).toBe("structure");
    expect(missing.error).toContain("path[1] addresses an array that does not exist");
    expect(refused(applyOps({}, [{ op: "set", path: ["l", "-"], value: 1 }])).error).toContain("does not exist");
    // An intermediate index must address an existing element: nothing is created inside an array.
    expect(refused(applyOps({ l: [] }, [{ op: "set", path: ["l", 0, "a"], value: 1 }])).error).toContain("path[1] is past the end");
  });

  it("refuses writing through a scalar", () => {
    for (const scalar of [SECRET, 5, true, null]) {
      const r = refused(applyOps({ s: scalar }, [{ op: "set", path: ["s", "x"], value: SECRET }]));
      expect(r.kind).toBe("structure");
      expect(r.error).toContain("path[0] holds neither an object nor an array");
    }
    expect(refused(applyOps({ s: "str" }, [{ op: "set", path: ["s", 0], value: 1 }])).ok).toBe(false);
  });

  it("refuses a segment of the wrong kind for its container", () => {
    expect(refused(applyOps({ o: {} }, [{ op: "set", path: ["o", 0], value: 1 }])).error).toContain("path[1] must be a key");
    expect(refused(applyOps({ l: [] }, [{ op: "set", path: ["l", "0"], value: 1 }])).error).toContain("path[1] must be an index");
    expect(refused(applyOps({ o: {} }, [{ op: "set", path: ["o", "-"], value: 1 }])).error).toContain("addresses an object");
  });

  it("replaces the root only with an object", () => {
    expect(ok(applyOps({ a: 1 }, [{ op: "set", path: [], value: { b: 2 } }])).doc).toEqual({ b: 2 });
    for (const value of [[1], "x", null, 3]) {
      const r = refused(applyOps({ a: 1 }, unchecked([{ op: "set", path: [], value }])));
      expect(r.kind).toBe("structure");
    }
  });

  it("refuses what the schema refuses, when handed ops that skipped it", () => {
    const bad = [
      { op: "set", path: ["l", "-", "x"], value: 1 },
      { op: "set", path: [-1], value: 1 },
      { op: "set", path: [1.5], value: 1 },
      { op: "set", path: ["a"] },
      { op: "set", path: Array(129).fill("a"), value: 1 },
      { op: "remove", path: ["l", "-"] },
      { op: "remove", path: [] },
      { op: "patch", path: ["a"] },
    ];
    for (const op of bad) expect(refused(applyOps({ l: [] }, unchecked([op]))).kind, JSON.stringify(op)).toBe("structure");
    // An unknown op name is caller input: it is not echoed.
    expect(refused(applyOps({}, unchecked([{ op: SECRET, path: ["a"] }]))).error).not.toContain(SECRET);
  });

  it('writes a "__proto__" key as a plain field, never touching a prototype', () => {
    const doc = JSON.parse('{"__proto__": {"x": 1}}') as JsonObject;
    const r = ok(
      applyOps(doc, [
        { op: "set", path: ["__proto__", "polluted"], value: true },
        { op: "set", path: ["n", "__proto__"], value: { polluted: true } },
        { op: "set", path: ["constructor", "prototype"], value: 1 },
      ]),
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(r.doc)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(r.doc.n)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(r.doc))).toEqual(
      JSON.parse('{"__proto__": {"x": 1, "polluted": true}, "n": {"__proto__": {"polluted": true}}, "constructor": {"prototype": 1}}'),
    );
  });

  it("copies written values: later ops never edit the caller's op values", () => {
    const value = { x: 1 };
    const ops: DeltaOp[] = [
      { op: "set", path: ["a"], value },
      { op: "set", path: ["b"], value },
      { op: "set", path: ["a", "x"], value: 2 },
    ];
    const r = ok(applyOps({}, ops));
    expect(value).toEqual({ x: 1 });
    expect(r.doc).toEqual({ a: { x: 2 }, b: { x: 1 } });
  });
});

describe("remove", () => {
  it("removes a key and an array element (later elements shift)", () => {
    const r = ok(
      applyOps({ a: 1, b: { c: 2, d: 3 }, l: [1, 2, 3] }, [
        { op: "remove", path: ["a"] },
        { op: "remove", path: ["b", "c"] },
        { op: "remove", path: ["l", 0] },
      ]),
    );
    expect(r.doc).toEqual({ b: { d: 3 }, l: [2, 3] });
    expect(r.skipped).toEqual([]);
  });

  it("is a skipped no-op when anything along the path is absent", () => {
    const doc = { a: { b: 1 }, l: [1] };
    const r = ok(
      applyOps(doc, [
        { op: "remove", path: ["zz"] },
        { op: "remove", path: ["zz", "y", "x"] },
        { op: "remove", path: ["a", "c"] },
        { op: "remove", path: ["l", 1] },
        { op: "remove", path: ["a", "b"] },
        { op: "remove", path: ["a", "b"] },
      ]),
    );
    expect(r.doc).toEqual({ a: {}, l: [1] });
    expect(r.skipped).toEqual([0, 1, 2, 3, 5]);
    expect(r.paths).toEqual([["a", "b"]]);
  });

  it("does not reach inherited properties", () => {
    const r = ok(
      applyOps({ a: {} }, [
        { op: "remove", path: ["a", "constructor"] },
        { op: "remove", path: ["toString"] },
      ]),
    );
    expect(r.skipped).toEqual([0, 1]);
  });

  it("refuses removing through a scalar or with a segment of the wrong kind", () => {
    expect(refused(applyOps({ s: SECRET }, [{ op: "remove", path: ["s", "x"] }])).error).not.toContain(SECRET);
    expect(refused(applyOps({ s: 1 }, [{ op: "remove", path: ["s", "x", "y"] }])).kind).toBe("structure");
    expect(refused(applyOps({ o: {} }, [{ op: "remove", path: ["o", 0] }])).error).toContain("path[1] must be a key");
  });
});

describe("keyed ops", () => {
  const people = (): JsonObject => ({
    people: [
      { id: 1, name: "Ann", age: 30 },
      { id: "1", name: "Str" },
      { id: 2, name: "Bob", tags: { a: 1 } },
      { name: "no id" },
      { id: 1.5, name: "float" },
      { id: true, name: "bool" },
      "not an object",
      [1],
      null,
    ],
  });

  describe("set_by_key", () => {
    it("creates the missing array (and intermediate objects) and appends", () => {
      const r = ok(applyOps({}, [{ op: "set_by_key", path: ["a", "l"], key: "id", items: [{ id: "x", v: 1 }] }]));
      expect(r.doc).toEqual({ a: { l: [{ id: "x", v: 1 }] } });
      expect(r.paths).toEqual([["a", "l"]]);
    });

    it("replaces the whole matching element; strings and integers never match each other", () => {
      const r = ok(
        applyOps(people(), [
          {
            op: "set_by_key",
            path: ["people"],
            key: "id",
            items: [
              { id: 1, name: "Ann2" },
              { id: 3, name: "Cy" },
            ],
          },
        ]),
      );
      const l = r.doc.people as JsonValue[];
      expect(l[0]).toEqual({ id: 1, name: "Ann2" });
      expect(l[1]).toEqual({ id: "1", name: "Str" });
      expect(l.at(-1)).toEqual({ id: 3, name: "Cy" });
      expect(l).toHaveLength(10);
    });

    it("never matches elements without a string/integer key", () => {
      const r = ok(applyOps(people(), [{ op: "set_by_key", path: ["people"], key: "name", items: [{ name: "Ann", new: true }] }]));
      expect((r.doc.people as JsonValue[])[0]).toEqual({ name: "Ann", new: true });
      // 1.5 and true are not key values: items carrying them are refused, elements holding them left alone.
      const s = ok(applyOps(people(), [{ op: "set_by_key", path: ["people"], key: "id", items: [{ id: 7 }] }]));
      expect((s.doc.people as JsonValue[]).slice(3, 9)).toEqual((people().people as JsonValue[]).slice(3, 9));
    });

    it("replaces every duplicate, and applies items in order", () => {
      const r = ok(
        applyOps(
          {
            l: [
              { k: "a", n: 1 },
              { k: "a", n: 2 },
            ],
          },
          [
            {
              op: "set_by_key",
              path: ["l"],
              key: "k",
              items: [
                { k: "a", n: 3 },
                { k: "b", n: 1 },
                { k: "b", n: 2 },
              ],
            },
          ],
        ),
      );
      expect(r.doc).toEqual({
        l: [
          { k: "a", n: 3 },
          { k: "a", n: 3 },
          { k: "b", n: 2 },
        ],
      });
    });

    it("refuses a non-array at the path, and bad items, without echoing document values", () => {
      const notArray = refused(applyOps({ l: { k: SECRET } }, [{ op: "set_by_key", path: ["l"], key: "k", items: [{ k: 1 }] }]));
      expect(notArray.error).toBe("op 0 (set_by_key): path must address an array");
      expect(refused(applyOps({ l: [] }, unchecked([{ op: "set_by_key", path: ["l"], key: "k", items: ["x"] }]))).error).toContain(
        "items[0] must be an object",
      );
      expect(refused(applyOps({ l: [] }, unchecked([{ op: "set_by_key", path: ["l"], key: "k", items: [[1]] }]))).error).toContain(
        "items[0] must be an object",
      );
      for (const k of [1.5, true, null, { s: SECRET }, undefined]) {
        const r = refused(applyOps({ l: [] }, unchecked([{ op: "merge_by_key", path: ["l"], key: "k", items: [{ k: 1 }, { k, s: SECRET }] }])));
        expect(r.error).toContain("items[1] must hold a string or integer");
        expect(r.error).not.toContain(SECRET);
      }
      expect(refused(applyOps({}, unchecked([{ op: "set_by_key", path: ["l"], key: "", items: [] }]))).error).toContain("key must be a non-empty string");
    });

    it("an empty payload creates the missing array, and is skipped when the array exists", () => {
      expect(ok(applyOps({}, [{ op: "set_by_key", path: ["l"], key: "k", items: [] }])).doc).toEqual({ l: [] });
      expect(ok(applyOps({ l: [] }, [{ op: "set_by_key", path: ["l"], key: "k", items: [] }])).skipped).toEqual([0]);
    });

    it("refuses creating an array past the end of a parent array, or under a missing one", () => {
      expect(refused(applyOps({ l: [] }, [{ op: "set_by_key", path: ["l", 0], key: "k", items: [] }])).error).toContain("past the end");
      expect(refused(applyOps({}, [{ op: "set_by_key", path: ["l", 0], key: "k", items: [] }])).error).toContain("does not exist");
    });
  });

  describe("merge_by_key", () => {
    it("shallow-merges into matches (nested objects replaced, not merged) and appends the rest", () => {
      const r = ok(applyOps(people(), [{ op: "merge_by_key", path: ["people"], key: "id", items: [{ id: 2, tags: { b: 2 }, age: 40 }, { id: 9 }] }]));
      const l = r.doc.people as JsonValue[];
      expect(l[2]).toEqual({ id: 2, name: "Bob", tags: { b: 2 }, age: 40 });
      expect(l.at(-1)).toEqual({ id: 9 });
    });

    it("creates the missing array", () => {
      expect(ok(applyOps({}, [{ op: "merge_by_key", path: ["l"], key: "id", items: [{ id: 0 }] }])).doc).toEqual({ l: [{ id: 0 }] });
    });
  });

  describe("remove_by_key", () => {
    it("removes every match and leaves unmatched and non-object elements", () => {
      const doc: JsonObject = { l: [{ id: 1 }, { id: 2 }, { id: 1, dup: true }, "s", { id: "2" }] };
      const r = ok(applyOps(doc, [{ op: "remove_by_key", path: ["l"], key: "id", keys: [1, 3] }]));
      expect(r.doc).toEqual({ l: [{ id: 2 }, "s", { id: "2" }] });
      expect(r.skipped).toEqual([]);
    });

    it("is skipped when nothing matches or the array is missing", () => {
      const r = ok(
        applyOps({ l: [{ id: 1 }] }, [
          { op: "remove_by_key", path: ["l"], key: "id", keys: ["1", 9] },
          { op: "remove_by_key", path: ["missing"], key: "id", keys: [1] },
          { op: "remove_by_key", path: ["a", "b", "c"], key: "id", keys: [1] },
        ]),
      );
      expect(r.doc).toEqual({ l: [{ id: 1 }] });
      expect(r.skipped).toEqual([0, 1, 2]);
      expect(r.paths).toEqual([]);
    });

    it("refuses a non-array at the path", () => {
      expect(refused(applyOps({ l: SECRET }, [{ op: "remove_by_key", path: ["l"], key: "id", keys: [1] }])).error).not.toContain(SECRET);
    });
  });

  describe("unset_by_key", () => {
    it("removes the named fields from each match", () => {
      const r = ok(applyOps(people(), [{ op: "unset_by_key", path: ["people"], key: "id", keys: [1, 2], fields: ["age", "tags", "absent"] }]));
      const l = r.doc.people as JsonValue[];
      expect(l.slice(0, 3)).toEqual([
        { id: 1, name: "Ann" },
        { id: "1", name: "Str" },
        { id: 2, name: "Bob" },
      ]);
    });

    it("is skipped when the array is missing, nothing matches, or matches lack every field", () => {
      const r = ok(
        applyOps({ l: [{ id: 1, a: 1 }] }, [
          { op: "unset_by_key", path: ["missing"], key: "id", keys: [1], fields: ["a"] },
          { op: "unset_by_key", path: ["l"], key: "id", keys: [2], fields: ["a"] },
          { op: "unset_by_key", path: ["l"], key: "id", keys: [1], fields: ["b"] },
          { op: "unset_by_key", path: ["l"], key: "id", keys: [1], fields: ["a"] },
        ]),
      );
      expect(r.doc).toEqual({ l: [{ id: 1 }] });
      expect(r.skipped).toEqual([0, 1, 2]);
    });

    it("refuses unsetting the key field", () => {
      const r = refused(applyOps({ l: [{ id: 1 }] }, unchecked([{ op: "unset_by_key", path: ["l"], key: "id", keys: [1], fields: ["id"] }])));
      expect(r.error).toBe("op 0 (unset_by_key): fields must not include the key field");
    });
  });

  describe("set_by_key_each", () => {
    it("sets the field on each match, with its own copy of the value", () => {
      const r = ok(
        applyOps({ l: [{ id: 1 }, { id: 2 }, { id: 3 }] }, [
          { op: "set_by_key_each", path: ["l"], key: "id", keys: [1, 2, 7], field: "f", value: { n: 0 } },
          { op: "set", path: ["l", 0, "f", "n"], value: 1 },
        ]),
      );
      expect(r.doc).toEqual({ l: [{ id: 1, f: { n: 1 } }, { id: 2, f: { n: 0 } }, { id: 3 }] });
    });

    it("is skipped when nothing matches or the array is missing", () => {
      const r = ok(
        applyOps({ l: [{ id: 1 }] }, [
          { op: "set_by_key_each", path: ["l"], key: "id", keys: ["1"], field: "f", value: 1 },
          { op: "set_by_key_each", path: ["m"], key: "id", keys: [1], field: "f", value: 1 },
        ]),
      );
      expect(r.doc).toEqual({ l: [{ id: 1 }] });
      expect(r.skipped).toEqual([0, 1]);
    });

    it("refuses setting the key field", () => {
      expect(refused(applyOps({ l: [] }, unchecked([{ op: "set_by_key_each", path: ["l"], key: "id", keys: [], field: "id", value: 1 }]))).kind).toBe(
        "structure",
      );
    });
  });

  it('refuse an empty path (the root is not an array) and "-" when handed unchecked', () => {
    expect(refused(applyOps({}, unchecked([{ op: "remove_by_key", path: [], key: "id", keys: [] }]))).error).toContain("root is an object");
    expect(refused(applyOps({ l: [] }, unchecked([{ op: "set_by_key", path: ["l", "-"], key: "id", items: [] }]))).kind).toBe("structure");
  });
});

describe("write regimes", () => {
  const regimes: Regime[] = [
    { path: ["profile", "contacts"], regime: "composing" },
    { path: ["settings"], regime: "single" },
  ];
  const doc = () => ({ profile: { contacts: [{ id: 1, n: "a" }], name: "x" }, settings: { a: 1 } });

  it("refuses a set or remove at or above a composing path", () => {
    const writes: DeltaOp[] = [
      { op: "set", path: ["profile", "contacts"], value: [] },
      { op: "set", path: ["profile"], value: {} },
      { op: "set", path: [], value: {} },
      { op: "remove", path: ["profile", "contacts"] },
      { op: "remove", path: ["profile"] },
    ];
    for (const op of writes) {
      const r = refused(applyOps(doc(), [op], regimes));
      expect(r.kind, JSON.stringify(op)).toBe("regime");
      expect(r.error).toMatch(/^op 0 \((set|remove)\): path is at or above a composing path/);
    }
  });

  it("allows keyed ops on it, edits inside it, and writes beside it", () => {
    const r = ok(
      applyOps(
        doc(),
        [
          { op: "merge_by_key", path: ["profile", "contacts"], key: "id", items: [{ id: 1, m: 1 }] },
          { op: "set_by_key", path: ["profile", "contacts"], key: "id", items: [{ id: 2 }] },
          { op: "set", path: ["profile", "contacts", 0, "n"], value: "b" },
          { op: "set", path: ["profile", "contacts", "-"], value: { id: 3 } },
          { op: "remove", path: ["profile", "contacts", 1] },
          { op: "set", path: ["profile", "name"], value: "y" },
          { op: "remove_by_key", path: ["profile", "contacts"], key: "id", keys: [3] },
        ],
        regimes,
      ),
    );
    expect(r.doc.profile).toEqual({ contacts: [{ id: 1, n: "b", m: 1 }], name: "y" });
  });

  it("single imposes nothing; no regimes impose nothing", () => {
    expect(
      ok(
        applyOps(
          doc(),
          [
            { op: "set", path: ["settings"], value: 2 },
            { op: "remove", path: ["settings"] },
          ],
          regimes,
        ),
      ).doc,
    ).not.toHaveProperty("settings");
    expect(ok(applyOps(doc(), [{ op: "set", path: [], value: {} }])).doc).toEqual({});
    expect(ok(applyOps(doc(), [{ op: "set", path: [], value: {} }], [{ path: ["profile"], regime: "single" }])).doc).toEqual({});
  });

  it("a regime refusal later in the batch discards the earlier ops", () => {
    const before = doc();
    const r = applyOps(
      before,
      [
        { op: "set", path: ["settings", "a"], value: 2 },
        { op: "remove", path: ["profile"] },
      ],
      regimes,
    );
    expect(refused(r).error).toMatch(/^op 1 /);
    expect(before).toEqual(doc());
  });
});

describe("batches", () => {
  it("are atomic: the first refusal names its op and leaves the input as it was", () => {
    const doc = { a: { b: [1, 2] }, s: "x" };
    const snapshot = structuredClone(doc);
    const r = refused(
      applyOps(doc, [
        { op: "set", path: ["a", "b", "-"], value: 3 },
        { op: "remove", path: ["a", "b", 0] },
        { op: "set", path: ["s", "t"], value: 1 },
        { op: "set", path: ["z"], value: 1 },
      ]),
    );
    expect(r.error).toMatch(/^op 2 \(set\): /);
    expect(doc).toEqual(snapshot);
  });

  it("an empty batch answers the document unchanged (as a copy)", () => {
    const doc = { a: { b: 1 } };
    const r = ok(applyOps(doc, []));
    expect(r).toEqual({ ok: true, doc, skipped: [], paths: [] });
    expect(r.doc).not.toBe(doc);
    expect(r.doc.a).not.toBe(doc.a);
  });

  it("the answered document and paths share nothing with the inputs", () => {
    const doc: JsonObject = { l: [{ id: 1, o: { x: 1 } }] };
    const ops: DeltaOp[] = [
      { op: "set_by_key", path: ["l"], key: "id", items: [{ id: 2, o: { x: 2 } }] },
      { op: "set", path: ["v"], value: { w: [1] } },
    ];
    const opsBefore = structuredClone(ops);
    const r = ok(applyOps(doc, ops));
    ((r.doc.l as JsonObject[])[0].o as JsonObject).x = 99;
    ((r.doc.l as JsonObject[])[1].o as JsonObject).x = 99;
    ((r.doc.v as JsonObject).w as number[]).push(2);
    r.paths[0].push("mutated");
    expect(doc).toEqual({ l: [{ id: 1, o: { x: 1 } }] });
    expect(ops).toEqual(opsBefore);
  });

  it("never echo document values, document keys or op values in errors", () => {
    const doc: JsonObject = { [SECRET]: SECRET, s: SECRET, l: [{ id: SECRET, [SECRET]: 1 }], o: { [SECRET]: { v: SECRET } } };
    const attempts: unknown[][] = [
      [{ op: "set", path: [SECRET, "x"], value: SECRET }],
      [{ op: "set", path: ["s", SECRET], value: SECRET }],
      [{ op: "set", path: ["o", SECRET, "v", "w"], value: SECRET }],
      [{ op: "set", path: ["l", 5], value: SECRET }],
      [{ op: "set", path: ["l", SECRET], value: SECRET }],
      [{ op: "set", path: [], value: SECRET }],
      [{ op: "remove", path: ["s", SECRET] }],
      [{ op: "set_by_key", path: ["s"], key: SECRET, items: [{ [SECRET]: SECRET }] }],
      [{ op: "set_by_key", path: ["l"], key: SECRET, items: [{ [SECRET]: 1.5, x: SECRET }] }],
      [{ op: "merge_by_key", path: [SECRET], key: "id", items: [{ id: SECRET }] }],
      [{ op: "unset_by_key", path: ["l"], key: SECRET, keys: [SECRET], fields: [SECRET] }],
      [{ op: "set_by_key_each", path: ["l"], key: SECRET, keys: [SECRET], field: SECRET, value: SECRET }],
      [{ op: "remove_by_key", path: ["o"], key: "id", keys: [SECRET] }],
      [{ op: SECRET, path: [SECRET] }],
    ];
    for (const ops of attempts) {
      const r = refused(applyOps(doc, unchecked(ops)));
      expect(r.error, JSON.stringify(ops)).not.toContain(SECRET);
    }
    const regime = refused(applyOps(doc, [{ op: "remove", path: [SECRET] }], [{ path: [SECRET, "x"], regime: "composing" }]));
    expect(regime.kind).toBe("regime");
    expect(regime.error).not.toContain(SECRET);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties.

/** Documents as JSON.parse yields them (no -0, no null-prototype objects). */
const asJson = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const keyArb = fc.constantFrom("a", "b", "c", "l", "-", "__proto__", "0");
const segArb = fc.oneof(keyArb, fc.constantFrom(0, 1, 2, 3));
const pathArb = fc.array(segArb, { maxLength: 4 });
const valueArb: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 3 }).map((v) => asJson(v) as JsonValue);
const keyed = fc.array(fc.record({ id: fc.oneof(fc.constantFrom("x", "y"), fc.integer({ min: 0, max: 3 })), n: fc.integer() }), { maxLength: 4 });
const docArb = fc
  .dictionary(keyArb, fc.oneof(valueArb, keyed, fc.dictionary(keyArb, fc.oneof(valueArb, keyed), { maxKeys: 3 })), { maxKeys: 5 })
  .map((d) => asJson(d) as JsonObject);
const keyValArb = fc.oneof(fc.constantFrom("x", "y"), fc.integer({ min: 0, max: 3 }));
const opArb: fc.Arbitrary<DeltaOp> = fc.oneof(
  fc.record({ op: fc.constant("set" as const), path: pathArb, value: valueArb }),
  fc.record({ op: fc.constant("remove" as const), path: pathArb }),
  fc.record({ op: fc.constantFrom("set_by_key" as const, "merge_by_key" as const), path: pathArb, key: fc.constant("id"), items: keyed }),
  fc.record({ op: fc.constant("remove_by_key" as const), path: pathArb, key: fc.constant("id"), keys: fc.array(keyValArb, { maxLength: 3 }) }),
  fc.record({
    op: fc.constant("unset_by_key" as const),
    path: pathArb,
    key: fc.constant("id"),
    keys: fc.array(keyValArb, { maxLength: 3 }),
    fields: fc.constant(["n"]).map((f) => [...f]),
  }),
  fc.record({
    op: fc.constant("set_by_key_each" as const),
    path: pathArb,
    key: fc.constant("id"),
    keys: fc.array(keyValArb, { maxLength: 3 }),
    field: keyArb,
    value: valueArb,
  }),
);
const regimesArb = fc.array(fc.record({ path: fc.array(keyArb, { maxLength: 3 }), regime: fc.constantFrom("single" as const, "composing" as const) }), {
  maxLength: 2,
});

describe("properties", () => {
  it("never mutate the document or the ops, whatever the outcome; a failed batch changes nothing", () => {
    // The last op always fails (an index into an array that cannot exist), so the batch must too.
    const failing: DeltaOp = { op: "set", path: ["__never__", 0], value: 1 };
    fc.assert(
      fc.property(docArb, fc.array(opArb, { maxLength: 6 }), regimesArb, fc.boolean(), (doc, ops, regimes, fail) => {
        const batch = fail ? [...ops, failing] : ops;
        const docBefore = structuredClone(doc);
        const opsBefore = structuredClone(batch);
        const r = applyOps(doc, batch, regimes);
        expect(doc).toEqual(docBefore);
        expect(batch).toEqual(opsBefore);
        if (fail) expect(r.ok).toBe(false);
        if (r.ok) {
          // Every op is either applied or skipped, once, in order.
          expect(r.paths.length + r.skipped.length).toBe(batch.length);
          expect(r.doc).toEqual(asJson(r.doc));
        }
      }),
      { numRuns: 400 },
    );
  });

  it("set then read round-trips, whenever the path is writable", () => {
    const stringPath = fc.array(
      fc.oneof(
        keyArb.filter((k) => k !== "-"),
        fc.string({ maxLength: 5 }).filter((k) => k !== "-"),
      ),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(docArb, stringPath, valueArb, (doc, path, value) => {
        const r = applyOps(doc, [{ op: "set", path, value }]);
        // A key path is writable unless some proper prefix holds something other than an object.
        const blocked = path.slice(0, -1).some((_, j) => {
          const v = readAt(doc, path.slice(0, j + 1));
          return v !== undefined && (v === null || typeof v !== "object" || Array.isArray(v));
        });
        expect(r.ok).toBe(!blocked);
        if (r.ok) {
          expect(readAt(r.doc, path)).toEqual(value);
          expect(r.paths).toEqual([path]);
        }
      }),
      { numRuns: 400 },
    );
  });

  it("set_by_key is idempotent, and remove_by_key then leaves no element with those keys", () => {
    const items = fc.uniqueArray(fc.record({ id: keyValArb, n: fc.integer() }), { selector: (i) => i.id, maxLength: 4 });
    fc.assert(
      fc.property(keyed, items, (existing, its) => {
        const op: DeltaOp = { op: "set_by_key", path: ["l"], key: "id", items: its };
        const once = ok(applyOps({ l: existing }, [op]));
        const twice = ok(applyOps(once.doc, [op]));
        expect(twice.doc).toEqual(once.doc);
        const ids: Array<string | number> = its.map((i) => i.id);
        const gone = ok(applyOps(once.doc, [{ op: "remove_by_key", path: ["l"], key: "id", keys: ids }]));
        expect((gone.doc.l as JsonObject[]).some((el) => ids.includes(el.id as string | number))).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
