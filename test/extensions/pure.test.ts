/** The extensions' pure parts (docs/extensions.md): each extension, the cache, combos and the catalog. */
import { describe, expect, it } from "vitest";
import { ResultCache, cacheKey, withCache } from "../../src/extensions/cache";
import { canonicalJson } from "../../src/extensions/canonical";
import { catalogView } from "../../src/extensions/catalog";
import { Combo, Combos, chainOf, comboKey, comboLabel, editCombos, resolveElement } from "../../src/extensions/combos";
import { MaxResultBytesConfig, capResult, cutUtf8 } from "../../src/extensions/max-result-bytes";
import type { CallResult, ExtensionCall } from "../../src/extensions/model";
import { REDACTED, RedactConfig, redactPaths } from "../../src/extensions/redact";
import { RetryConfig, backoffDelay, withRetry } from "../../src/extensions/retry";
import { must } from "../../src/platform/must";

function fakeCall(over: Partial<ExtensionCall> = {}): ExtensionCall & { steps: string[]; slept: number[] } {
  const steps: string[] = [];
  const slept: number[] = [];
  return {
    tool: "t",
    version: null,
    kwargs: { a: 1 },
    caller: "u/fp",
    inner: "[]",
    now: () => 1_000,
    step: async (name, fn) => {
      steps.push(name);
      return fn();
    },
    sleep: async (ms) => {
      slept.push(ms);
    },
    steps,
    slept,
    ...over,
  };
}

/** A `next` answering the scripted results in turn (the last one repeats), counting its calls. */
function scripted(...results: CallResult[]) {
  let i = 0;
  const next = async () => results[Math.min(i++, results.length - 1)];
  return { next, calls: () => i };
}

describe("redact", () => {
  const value = {
    user: { email: "a@x", name: "ada" },
    items: [
      { token: "t1", id: 1 },
      { token: "t2", id: 2 },
    ],
    list: ["a", "b"],
  };

  it("replaces keys, array indexes and wildcards; never adds what is absent; never mutates", () => {
    const before = JSON.stringify(value);
    expect(redactPaths(value, ["user.email", "items.*.token", "list.1", "nope.deeper", "user.name.x"])).toEqual({
      user: { email: REDACTED, name: "ada" },
      items: [
        { token: REDACTED, id: 1 },
        { token: REDACTED, id: 2 },
      ],
      list: ["a", REDACTED],
    });
    expect(JSON.stringify(value)).toBe(before);
    expect(redactPaths(value, ["*"])).toEqual({ user: REDACTED, items: REDACTED, list: REDACTED });
    expect(redactPaths("text", ["a"])).toBe("text");
    expect(redactPaths([1, 2], ["5"])).toEqual([1, 2]);
  });

  it("writes a __proto__ key as an own property, never through the prototype", () => {
    const v = JSON.parse('{"__proto__": {"secret": 1}}');
    const out = redactPaths(v, ["__proto__.secret"]) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, "__proto__")?.value).toEqual({ secret: REDACTED });
  });

  it("validates its config: 1-64 non-empty dotted paths, nothing else", () => {
    expect(RedactConfig.safeParse({ paths: ["a.b", "*"] }).success).toBe(true);
    for (const bad of [{}, { paths: [] }, { paths: ["a..b"] }, { paths: [".a"] }, { paths: ["a b"] }, { paths: ["a"], extra: 1 }]) {
      expect(RedactConfig.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

describe("max_result_bytes", () => {
  const cfg = (c: object) => MaxResultBytesConfig.parse(c);

  it("passes a result within the cap and fails one over it by default, naming the cap only", () => {
    expect(capResult({ a: "x" }, cfg({ bytes: 16 }))).toEqual({ ok: true, value: { a: "x" } });
    const r = capResult({ secret: "y".repeat(100) }, cfg({ bytes: 16 }));
    expect(r).toEqual({ ok: false, kind: "tool_error", message: "the result is larger than max_result_bytes (16 bytes)" });
  });

  it("truncates a string on a code point boundary, and summarizes anything else", () => {
    const s = capResult("é".repeat(100), cfg({ bytes: 20, on_over: "truncate" }));
    expect(s.ok && typeof s.value === "string" && s.value.endsWith("…")).toBe(true);
    expect(s.ok && new TextEncoder().encode(s.value as string).byteLength).toBeLessThanOrEqual(20);
    const o = capResult({ list: Array.from({ length: 50 }, (_, i) => i) }, cfg({ bytes: 32, on_over: "truncate" }));
    expect(o.ok && o.value).toMatchObject({ truncated: true, bytes: expect.any(Number) });
    expect(o.ok && (o.value as { preview: string }).preview.startsWith('{"list":[0,1,')).toBe(true);
    expect(cutUtf8("a😀b", 4)).toBe("a");
    expect(cutUtf8("a😀b", 5)).toBe("a😀");
  });

  it("defaults bytes to 65536 and refuses out-of-range configs", () => {
    expect(cfg({})).toEqual({ bytes: 65_536, on_over: "error" });
    for (const bad of [{ bytes: 0 }, { bytes: 2_000_000 }, { bytes: 1.5 }, { on_over: "drop" }])
      expect(MaxResultBytesConfig.safeParse(bad).success).toBe(false);
  });
});

describe("retry", () => {
  const cfg = (c: object) => RetryConfig.parse(c);

  it("retries transient failures with doubling backoff, each attempt a step", async () => {
    const call = fakeCall();
    const s = scripted({ ok: false, kind: "transport", message: "x" }, { ok: false, kind: "timeout", message: "y" }, { ok: true, value: 3 });
    expect(await withRetry(cfg({ attempts: 4, backoff_ms: 100 }), call, s.next)).toEqual({ ok: true, value: 3 });
    expect(s.calls()).toBe(3);
    expect(call.slept).toEqual([100, 200]);
    expect(call.steps).toEqual(["t (attempt 1 of 4)", "t (attempt 2 of 4)", "t (attempt 3 of 4)"]);
  });

  it("stops at the attempt budget and answers the last failure", async () => {
    const call = fakeCall();
    const s = scripted({ ok: false, kind: "timeout", message: "slow" });
    expect(await withRetry(cfg({ attempts: 2, backoff_ms: 0 }), call, s.next)).toEqual({ ok: false, kind: "timeout", message: "slow" });
    expect(s.calls()).toBe(2);
  });

  it("never retries a non-transient failure", async () => {
    for (const kind of ["http_status", "invalid_kwargs", "denied", "tool_error", "non_json"]) {
      const s = scripted({ ok: false, kind, message: "no" });
      await withRetry(cfg({}), fakeCall(), s.next);
      expect(s.calls(), kind).toBe(1);
    }
  });

  it("bounds its config", () => {
    expect(cfg({})).toEqual({ attempts: 3, backoff_ms: 200 });
    expect(backoffDelay(cfg({ backoff_ms: 50 }), 3)).toBe(200);
    for (const bad of [{ attempts: 0 }, { attempts: 6 }, { backoff_ms: 2001 }, { backoff_ms: -1 }]) expect(RetryConfig.safeParse(bad).success).toBe(false);
  });
});

describe("cache", () => {
  it("serves a success until its TTL, keyed by tool, version, chain, kwargs and caller", async () => {
    const cache = new ResultCache();
    let now = 0;
    const base = fakeCall({ now: () => now });
    const s = scripted({ ok: true, value: { n: 1 } });
    expect(await withCache(cache, { ttl_seconds: 10 }, base, s.next)).toEqual({ ok: true, value: { n: 1 } });
    now = 9_999;
    expect(await withCache(cache, { ttl_seconds: 10 }, base, s.next)).toEqual({ ok: true, value: { n: 1 } });
    expect(s.calls()).toBe(1);
    // Key order of the kwargs does not matter; every other part does.
    await withCache(cache, { ttl_seconds: 10 }, { ...base, kwargs: { a: 1 } }, s.next);
    expect(s.calls()).toBe(1);
    for (const other of [{ caller: "v/fp" }, { caller: "u/fp2" }, { tool: "t2" }, { version: "2" }, { inner: '[["redact"]]' }, { kwargs: { a: 2 } }]) {
      await withCache(cache, { ttl_seconds: 10 }, { ...base, ...other }, s.next);
    }
    expect(s.calls()).toBe(7);
    now = 10_000; // expired
    await withCache(cache, { ttl_seconds: 10 }, base, s.next);
    expect(s.calls()).toBe(8);
  });

  it("never caches a call for no key: two such calls would otherwise share one entry", async () => {
    const cache = new ResultCache();
    const keyless = fakeCall({ caller: null });
    const s = scripted({ ok: true, value: { n: 1 } });
    await withCache(cache, { ttl_seconds: 60 }, keyless, s.next);
    await withCache(cache, { ttl_seconds: 60 }, keyless, s.next);
    expect(s.calls()).toBe(2);
    expect(cache.size).toBe(0);
  });

  it("keeps no failure, and a hit cannot be changed by its reader", async () => {
    const cache = new ResultCache();
    const call = fakeCall();
    const fail = scripted({ ok: false, kind: "timeout", message: "x" });
    await withCache(cache, { ttl_seconds: 60 }, call, fail.next);
    await withCache(cache, { ttl_seconds: 60 }, call, fail.next);
    expect(fail.calls()).toBe(2);
    const ok = scripted({ ok: true, value: { list: [1] } });
    const first = await withCache(cache, { ttl_seconds: 60 }, call, ok.next);
    const hit = await withCache(cache, { ttl_seconds: 60 }, call, ok.next);
    (hit as { value: { list: number[] } }).value.list.push(2);
    expect(await withCache(cache, { ttl_seconds: 60 }, call, ok.next)).toEqual({ ok: true, value: { list: [1] } });
    expect(first).toEqual({ ok: true, value: { list: [1] } });
  });

  it("is bounded: entries, total bytes, entry size", () => {
    const cache = new ResultCache(2, 1_000, 100);
    expect(cache.set("a", "1", 10)).toBe(true);
    expect(cache.set("b", "2", 10)).toBe(true);
    cache.get("a", 0); // a is now the most recently used
    cache.set("c", "3", 10);
    expect(cache.size).toBe(2);
    expect(cache.get("b", 0)).toBeNull();
    expect(cache.get("a", 0)).toBe("1");
    expect(cache.set("big", "x".repeat(60), 10)).toBe(false);
  });

  it("keys by digest", async () => {
    const k = await cacheKey({ tool: "t", version: null, inner: "[]", kwargs: { b: 1, a: 2 }, caller: "-" });
    expect(k).toMatch(/^[0-9a-f]{64}$/);
    expect(await cacheKey({ tool: "t", version: null, inner: "[]", kwargs: { a: 2, b: 1 }, caller: "-" })).toBe(k);
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[{"c":2,"d":1}]}');
  });
});

describe("combos", () => {
  it("resolve against the catalog with each extension's config schema, naming where without values", () => {
    expect(resolveElement("retry")).toMatchObject({ ok: true, element: { config: { attempts: 3, backoff_ms: 200 } } });
    expect(resolveElement({ name: "cache", config: { ttl_seconds: 5 } })).toMatchObject({ ok: true, element: { config: { ttl_seconds: 5 } } });
    expect(resolveElement("nope-SECRET")).toMatchObject({ ok: false, path: [] });
    expect(JSON.stringify(resolveElement("nope-SECRET"))).not.toContain("SECRET");
    expect(resolveElement({ name: "nope", config: {} })).toMatchObject({ ok: false, path: ["name"] });
    expect(resolveElement("redact")).toMatchObject({ ok: false, message: expect.stringContaining("redact needs a config") });
    expect(resolveElement({ name: "retry", config: { attempts: 99 } })).toMatchObject({ ok: false, path: ["config", "attempts"] });
    const bad = Combos.safeParse([["retry"], ["cache", { name: "retry", config: { surprise: "VALUE" } }]]);
    expect(bad.success).toBe(false);
    expect(must(bad.error, "bad.error").issues[0].path).toEqual([1, 1, "config"]);
    expect(JSON.stringify(must(bad.error, "bad.error").issues)).not.toContain("VALUE");
    for (const shape of [[[]], [[5]], ["retry"], [[{ name: "retry" }]], [[{ name: "retry", config: {}, extra: 1 }]]]) {
      expect(Combos.safeParse(shape).success, JSON.stringify(shape)).toBe(false);
    }
    expect(Combo.safeParse(Array(9).fill("cache")).success).toBe(false);
  });

  it("compare by names and parsed configs, and label by names", () => {
    expect(comboKey(["retry"])).toBe(comboKey([{ name: "retry", config: {} }]));
    expect(comboKey(["retry"])).toBe(comboKey([{ name: "retry", config: { attempts: 3 } }]));
    expect(comboKey(["retry"])).not.toBe(comboKey([{ name: "retry", config: { attempts: 2 } }]));
    expect(comboKey(["retry", "cache"])).not.toBe(comboKey(["cache", "retry"]));
    expect(comboLabel(["retry", { name: "redact", config: { paths: ["SECRET"] } }])).toBe("[retry, redact]");
  });

  it("edit: removals first, then additions; absent 404, present 400, over the cap 400", () => {
    expect(editCombos([["cache"]], [["retry"]], [])).toEqual({ ok: true, combos: [["cache"], ["retry"]] });
    expect(editCombos([["cache"], ["retry"]], [], [[{ name: "cache", config: {} }]])).toEqual({ ok: true, combos: [["retry"]] });
    expect(editCombos([["cache"]], [["cache"]], [["cache"]])).toEqual({ ok: true, combos: [["cache"]] });
    expect(editCombos([["cache"]], [["cache"]], [])).toMatchObject({ ok: false, status: 400, message: expect.stringContaining("[cache]") });
    expect(editCombos([], [], [["retry"]])).toMatchObject({ ok: false, status: 404, message: expect.stringContaining("[retry]") });
    expect(editCombos([], [["retry"], ["retry"]], [])).toMatchObject({ ok: false, status: 400 });
    const full = Array.from({ length: 16 }, (_, i) => [{ name: "cache", config: { ttl_seconds: i + 1 } }]);
    expect(editCombos(full, [["retry"]], [])).toMatchObject({ ok: false, status: 400 });
  });

  it("make one chain, combo by combo", () => {
    const chain = chainOf([[{ name: "redact", config: { paths: ["a"] } }, "retry"], ["cache"]]);
    expect(chain.map((e) => e.def.name)).toEqual(["redact", "retry", "cache"]);
    expect(chain[1].config).toEqual({ attempts: 3, backoff_ms: 200 });
  });
});

describe("catalog", () => {
  it("lists the four built-ins with kinds, JSON Schemas of their configs and whether a bare name works", () => {
    const items = catalogView();
    expect(items.map((e) => [e.name, e.kind, e.config_required])).toEqual([
      ["cache", "wrapper", false],
      ["max_result_bytes", "transformer", false],
      ["redact", "transformer", true],
      ["retry", "wrapper", false],
    ]);
    const retry = must(
      items.find((e) => e.name === "retry"),
      'items.find((e) => e.name === "retry")',
    );
    expect(retry.config_schema).toMatchObject({ type: "object", properties: { attempts: { type: "integer", maximum: 5 } }, additionalProperties: false });
  });
});
