/** Tool metadata's pure rules (docs/tool-metadata.md): RFC 7396 merge patch, the folder tree. */
import { describe, expect, it } from "vitest";
import { ancestry, depthOf, subtreeHeight, tooDeepAfterMove, wouldCycle } from "../../src/tool-meta/folders";
import { mergePatch } from "../../src/tool-meta/merge-patch";
import { DEFAULT_FIELDS } from "../../src/tool-meta/model";
import { patchedFields } from "../../src/tool-meta/store";

describe("JSON merge patch (RFC 7396)", () => {
  // The examples of RFC 7396, Appendix A.
  it.each([
    [{ a: "b" }, { a: "c" }, { a: "c" }],
    [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
    [{ a: "b" }, { a: null }, {}],
    [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
    [{ a: ["b"] }, { a: "c" }, { a: "c" }],
    [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
    [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
    [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
    [
      ["a", "b"],
      ["c", "d"],
      ["c", "d"],
    ],
    [{ a: "b" }, ["c"], ["c"]],
    [{ a: "foo" }, null, null],
    [{ a: "foo" }, "bar", "bar"],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: "b", c: null }, { a: "b" }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])("%j patched with %j is %j", (target, patch, result) => {
    expect(mergePatch(target as any, patch as any)).toEqual(result);
  });

  it("never mutates the target", () => {
    const target = { a: { b: 1 }, c: [1] };
    mergePatch(target, { a: { b: null }, c: [2] });
    expect(target).toEqual({ a: { b: 1 }, c: [1] });
  });

  it("on a tool row: null resets a member, arrays replace, absent members stay; the result is checked whole", () => {
    const row = patchedFields(DEFAULT_FIELDS, { tags: ["crm", "sales"], hidden: true });
    expect(row).toEqual({ tags: ["crm", "sales"], badges: [], hidden: true, folder_id: null });
    expect(patchedFields(row, { tags: ["crm"] })).toEqual({ ...row, tags: ["crm"] });
    expect(patchedFields(row, { hidden: null, badges: ["beta"] })).toEqual({ tags: ["crm", "sales"], badges: ["beta"], hidden: null, folder_id: null });
    expect(patchedFields(row, { tags: null })).toEqual({ ...row, tags: [] });
    expect(patchedFields(row, {})).toEqual(row);
  });
});

describe("the folder tree", () => {
  // a ─ b ─ c      d
  const parents = new Map<string, string | null>([
    ["a", null],
    ["b", "a"],
    ["c", "b"],
    ["d", null],
  ]);

  it("walks ancestry and depth", () => {
    expect(ancestry(parents, "c")).toEqual(["c", "b", "a"]);
    expect(depthOf(parents, "c")).toBe(3);
    expect(depthOf(parents, null)).toBe(0);
    expect(subtreeHeight(parents, "a")).toBe(3);
    expect(subtreeHeight(parents, "d")).toBe(1);
  });

  it("a move into itself or a descendant is a cycle; elsewhere it is not", () => {
    expect(wouldCycle(parents, "a", "a")).toBe(true);
    expect(wouldCycle(parents, "a", "c")).toBe(true);
    expect(wouldCycle(parents, "b", "c")).toBe(true);
    expect(wouldCycle(parents, "c", "a")).toBe(false);
    expect(wouldCycle(parents, "a", "d")).toBe(false);
    expect(wouldCycle(parents, "a", null)).toBe(false);
  });

  it("a move may not take a subtree past 16 levels", () => {
    const chain = new Map<string, string | null>();
    for (let i = 0; i < 16; i++) chain.set(`f${i}`, i === 0 ? null : `f${i - 1}`);
    chain.set("x", null);
    chain.set("y", "x");
    expect(tooDeepAfterMove(chain, "x", "f13")).toBe(false); // 14 + 2 = 16
    expect(tooDeepAfterMove(chain, "x", "f14")).toBe(true); // 15 + 2 = 17
  });
});
