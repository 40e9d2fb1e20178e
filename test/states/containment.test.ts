import { describe, expect, it } from "vitest";
import { contains } from "../../src/states/containment";

describe("JSON containment (records/search filters)", () => {
  it("objects: every filter key present with a contained value; extra document keys are fine", () => {
    expect(contains({ a: 1, b: { c: "x", d: true } }, { b: { c: "x" } })).toBe(true);
    expect(contains({ a: 1 }, { a: 2 })).toBe(false);
    expect(contains({ a: 1 }, { b: null })).toBe(false);
    expect(contains({ b: null }, { b: null })).toBe(true);
    expect(contains({ a: 1 }, {})).toBe(true);
  });
  it("arrays: each filter element is contained in some document element, in any order", () => {
    expect(contains({ tags: ["a", "b", "c"] }, { tags: ["c", "a"] })).toBe(true);
    expect(contains({ tags: ["a"] }, { tags: ["z"] })).toBe(false);
    expect(contains({ items: [{ id: 1, n: "x" }, { id: 2 }] }, { items: [{ id: 2 }] })).toBe(true);
    expect(contains({ items: { id: 1 } }, { items: [{ id: 1 }] })).toBe(false);
  });
  it("scalars: equal only, no coercion", () => {
    expect(contains(1, 1)).toBe(true);
    expect(contains("1", 1)).toBe(false);
    expect(contains([1], 1)).toBe(false);
    expect(contains({ a: [1] }, { a: 1 })).toBe(false);
  });
});
