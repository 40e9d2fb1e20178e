import { describe, expect, it } from "vitest";
import { JqError, jqCompile, jqOne, jqRun } from "../../../src/platform/jq/engine";

describe("jq engine (jq-wasm inside workerd)", () => {
  it("returns a single output", async () => {
    expect(await jqRun(".a + 1", { a: 41 })).toEqual([42]);
  });
  it("returns multiple outputs in order", async () => {
    expect(await jqRun(".[] | . * 2", [1, 2, 3])).toEqual([2, 4, 6]);
  });
  it("returns no output as an empty list", async () => {
    expect(await jqRun("empty", {})).toEqual([]);
  });
  it("reports a compile error as kind compile", async () => {
    const err = await jqRun(".a |", {}).catch((e) => e);
    expect(err).toBeInstanceOf(JqError);
    expect(err.kind).toBe("compile");
    await expect(jqCompile("{")).rejects.toMatchObject({ kind: "compile" });
  });
  it("reports a runtime error even after earlier outputs", async () => {
    const err = await jqRun('1, error("boom")', null).catch((e) => e);
    expect(err).toBeInstanceOf(JqError);
    expect(err.kind).toBe("runtime");
    expect(err.message).toBe("boom");
  });
  it("reports type errors as runtime errors", async () => {
    await expect(jqRun(".a + 1", { a: "x" })).rejects.toMatchObject({ kind: "runtime" });
  });
  it("survives a trailing comment and definitions", async () => {
    expect(await jqRun("def twice: . * 2; .n | twice # doubled", { n: 4 })).toEqual([8]);
  });
  it("keeps unicode intact", async () => {
    expect(await jqOne(".t", { t: "héllo ✓ 😀" })).toBe("héllo ✓ 😀");
  });
  it("jqOne refuses zero or several outputs", async () => {
    await expect(jqOne("empty", null)).rejects.toMatchObject({ kind: "runtime" });
    await expect(jqOne("1,2", null)).rejects.toMatchObject({ kind: "runtime" });
  });
  it("compiles a valid program without caring about its result", async () => {
    await expect(jqCompile('.x | error("only at run time")')).resolves.toBeUndefined();
  });
});
