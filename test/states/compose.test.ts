/** Composing template fragments into a state's effective schema (pure). */
import { describe, expect, it } from "vitest";
import { type Attachment, composeEffectiveSchema, pathsOverlap, substituteParameters } from "../../src/states/effective-schema";

const base = () => ({
  type: "object",
  properties: { name: { type: "string" }, profile: { type: "object", properties: { age: { type: "integer" } } } },
  required: ["name"],
});

const attach = (path: string[], fragment: Record<string, unknown>, regimes: Attachment["regimes"] = []): Attachment => ({
  template: "t",
  path,
  fragment,
  regimes,
});

const frozenDeep = <T>(v: T): T => {
  if (v && typeof v === "object") {
    for (const child of Object.values(v)) frozenDeep(child);
    Object.freeze(v);
  }
  return v;
};

describe("pathsOverlap", () => {
  it("equal paths or a prefix overlap; siblings do not", () => {
    expect(pathsOverlap(["a"], ["a"])).toBe(true);
    expect(pathsOverlap(["a"], ["a", "b"])).toBe(true);
    expect(pathsOverlap(["a", "b"], ["a"])).toBe(true);
    expect(pathsOverlap([], ["a"])).toBe(true);
    expect(pathsOverlap(["a", "b"], ["a", "c"])).toBe(false);
    expect(pathsOverlap(["a"], ["b"])).toBe(false);
  });
});

describe("composeEffectiveSchema", () => {
  it("returns a copy of the base when nothing is attached", () => {
    const b = base();
    const r = composeEffectiveSchema(b, []);
    expect(r).toEqual({ ok: true, schema: base(), regimes: [] });
    if (r.ok) expect(r.schema).not.toBe(b);
  });

  it("places a fragment at depth, creating object schemas on the way", () => {
    const fragment = { type: "object", properties: { open: { type: "array" } } };
    const r = composeEffectiveSchema(base(), [attach(["crm", "tickets"], fragment)]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.schema.properties).toEqual({
      ...base().properties,
      crm: { type: "object", properties: { tickets: fragment } },
    });
    expect(r.schema.required).toEqual(["name"]);
  });

  it("places a fragment inside an existing base property", () => {
    const r = composeEffectiveSchema(base(), [attach(["profile", "prefs"], { type: "object" })]);
    expect(r.ok && (r.schema.properties as any).profile.properties).toEqual({ age: { type: "integer" }, prefs: { type: "object" } });
  });

  it("merges a root fragment's properties into the root", () => {
    const r = composeEffectiveSchema(base(), [attach([], { type: "object", properties: { score: { type: "number" } }, required: ["score"] })]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Object.keys(r.schema.properties as object)).toEqual(["name", "profile", "score"]);
    expect(r.schema.required).toEqual(["name"]); // only properties are carried
  });

  it("refuses a root fragment that redeclares a base property or declares none", () => {
    expect(composeEffectiveSchema(base(), [attach([], { properties: { name: { type: "number" } } })])).toMatchObject({
      ok: false,
      error: expect.stringContaining("overlapping path"),
    });
    expect(composeEffectiveSchema(base(), [attach([], { type: "object" })]).ok).toBe(false);
  });

  it("refuses a fragment landing on a property the base already has", () => {
    const top = composeEffectiveSchema(base(), [attach(["name"], { type: "string" })]);
    expect(top).toMatchObject({ ok: false, error: expect.stringContaining("overlapping path") });
    const nested = composeEffectiveSchema(base(), [attach(["profile", "age"], { type: "string" })]);
    expect(nested).toMatchObject({ ok: false, error: expect.stringContaining("overlapping path") });
  });

  it("refuses two attachments at the same path or one under the other", () => {
    for (const [p, q] of [
      [["a"], ["a"]],
      [["a"], ["a", "b"]],
      [["a", "b"], ["a"]],
      [[], ["z"]],
    ]) {
      const r = composeEffectiveSchema(base(), [attach(p, { type: "object", properties: { x: {} } }), attach(q, { type: "object", properties: { y: {} } })]);
      expect(r, JSON.stringify([p, q])).toMatchObject({ ok: false, error: expect.stringContaining("overlapping path") });
    }
    const siblings = composeEffectiveSchema(base(), [attach(["a", "b"], { type: "string" }), attach(["a", "c"], { type: "string" })]);
    expect(siblings.ok && (siblings.schema.properties as any).a.properties).toEqual({ b: { type: "string" }, c: { type: "string" } });
  });

  it("refuses a path through a property that is not an object schema", () => {
    expect(composeEffectiveSchema(base(), [attach(["name", "first"], { type: "string" })]).ok).toBe(false);
    const withBoolean = { type: "object", properties: { flag: true } };
    expect(composeEffectiveSchema(withBoolean, [attach(["flag", "x"], { type: "string" })]).ok).toBe(false);
  });

  it("prefixes each attachment's regimes with its path and concatenates them", () => {
    const r = composeEffectiveSchema(base(), [
      attach(["crm"], { type: "object" }, [
        { path: ["tickets"], regime: "composing" },
        { path: [], regime: "single" },
      ]),
      attach(["notes", "daily"], { type: "array" }, [{ path: ["0"], regime: "single" }]),
    ]);
    expect(r.ok && r.regimes).toEqual([
      { path: ["crm", "tickets"], regime: "composing" },
      { path: ["crm"], regime: "single" },
      { path: ["notes", "daily", "0"], regime: "single" },
    ]);
  });

  it("never changes its inputs, and the output shares nothing with them", () => {
    const b = frozenDeep(base());
    const fragment = frozenDeep({ type: "object", properties: { x: { type: "string" } } });
    const regimes = frozenDeep([{ path: ["x"], regime: "single" as const }]);
    const attachments = frozenDeep([attach(["profile", "deep", "er"], fragment, regimes), attach(["top"], { type: "string" })]);
    const snapshot = JSON.stringify([b, attachments]);
    const r = composeEffectiveSchema(b, attachments); // frozen: any write would throw
    expect(r.ok).toBe(true);
    expect(JSON.stringify([b, attachments])).toBe(snapshot);
    if (!r.ok) return;
    const placed = (r.schema.properties as any).profile.properties.deep.properties.er;
    expect(placed).toEqual(fragment);
    expect(placed).not.toBe(fragment);
    expect(r.regimes[0].path).not.toBe(regimes[0].path);
  });

  it("treats a __proto__ segment as a property name, not the prototype", () => {
    const r = composeEffectiveSchema(base(), [attach(["__proto__", "x"], { type: "string" })]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const props = r.schema.properties as Record<string, unknown>;
    expect(Object.hasOwn(props, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(props)).toBe(Object.prototype);
  });
});

describe("substituteParameters", () => {
  it("replaces every {$parameter} node, at any depth, with a copy of the value", () => {
    const labels = ["a", "b"];
    const fragment = {
      type: "object",
      properties: { status: { enum: { $parameter: "labels" } }, limit: { type: "integer", maximum: { $parameter: "max" } } },
      anyOf: [{ $parameter: "extra" }],
    };
    const r = substituteParameters(fragment, { labels, max: 5, extra: { type: "object" } });
    expect(r).toEqual({
      ok: true,
      value: { type: "object", properties: { status: { enum: ["a", "b"] }, limit: { type: "integer", maximum: 5 } }, anyOf: [{ type: "object" }] },
    });
    if (r.ok) expect((r.value as any).properties.status.enum).not.toBe(labels);
    expect(fragment.properties.status.enum).toEqual({ $parameter: "labels" }); // input unchanged
  });

  it("leaves objects that are not exactly {$parameter: name} alone", () => {
    const fragment = { a: { $parameter: "p", other: 1 }, b: { $parameter: 3 } };
    expect(substituteParameters(fragment, { p: "x" })).toEqual({ ok: true, value: fragment });
  });

  it("does not substitute inside a substituted value", () => {
    expect(substituteParameters({ a: { $parameter: "p" } }, { p: { $parameter: "q" }, q: 1 })).toEqual({ ok: true, value: { a: { $parameter: "q" } } });
  });

  it("refuses a reference to a parameter without a value, naming neither", () => {
    const r = substituteParameters({ a: { $parameter: "SECRET" } }, { other: 1 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).not.toContain("SECRET");
    expect(substituteParameters({ a: { $parameter: "constructor" } }, {}).ok).toBe(false);
    expect(substituteParameters({ a: { $parameter: "p" } }, { p: undefined }).ok).toBe(false);
    expect(substituteParameters({ a: { $parameter: "p" } }, { p: null })).toEqual({ ok: true, value: { a: null } });
  });
});
