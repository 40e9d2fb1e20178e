/** The pure rules of a state declaration: body shape, base-schema rules, re-declaration rules. */
import { describe, expect, it } from "vitest";
import { describeIssues } from "../../src/platform/http/validation";
import { StateDeclarationBody, StateName, SubjectKind, canonicalJson, checkBaseSchema, isNarrowing, removedKinds } from "../../src/states/declaration";

const base = () => ({
  type: "object",
  properties: { name: { type: "string" }, visits: { type: "integer", minimum: 0 } },
  required: ["name"],
  additionalProperties: false,
});

const body = (over: Record<string, unknown> = {}) => ({ schema: base(), subject_kinds: ["person", "thread"], ...over });

/** The refusal text of a body, as the 400 would read (also proves no value is echoed). */
function refusal(value: unknown): string {
  const r = StateDeclarationBody.safeParse(value);
  expect(r.success).toBe(false);
  return r.success ? "" : describeIssues(r.error, "body");
}

describe("names", () => {
  it("state names: lowercase slug, 1..128, no colon", () => {
    for (const ok of ["a", "0", "orders", "a_b-c9", "x".repeat(128)]) expect(StateName.safeParse(ok).success, ok).toBe(true);
    for (const bad of ["", "_a", "-a", "Orders", "a:b", "a b", "a.b", "é", "x".repeat(129)]) expect(StateName.safeParse(bad).success, bad).toBe(false);
  });
  it("subject kinds: a letter first, at most 63 characters", () => {
    for (const ok of ["person", "p", "a0_-", "a".repeat(63)]) expect(SubjectKind.safeParse(ok).success, ok).toBe(true);
    for (const bad of ["", "0a", "_a", "Person", "a:b", "a".repeat(64)]) expect(SubjectKind.safeParse(bad).success, bad).toBe(false);
  });
});

describe("StateDeclarationBody", () => {
  it("accepts a minimal body and fills the defaults", () => {
    const parsed = StateDeclarationBody.parse(body());
    expect(parsed).toEqual({ description: "", schema: base(), subject_kinds: ["person", "thread"], default_subject_kind: "person", retention_days: null });
  });

  it("keeps given values; drops name and null computed fields", () => {
    const parsed = StateDeclarationBody.parse(
      body({
        name: "whatever-the-body-says",
        description: "d",
        default_subject_kind: "thread",
        retention_days: 30,
        effective_schema: null,
        regimes: null,
        updated_at: null,
      }),
    );
    expect(parsed).toEqual({ description: "d", schema: base(), subject_kinds: ["person", "thread"], default_subject_kind: "thread", retention_days: 30 });
    expect(StateDeclarationBody.parse(body({ name: null, default_subject_kind: null })).default_subject_kind).toBe("person");
  });

  it("reads a TemplatedText schema as one, and any other object as a raw schema", () => {
    expect(StateDeclarationBody.parse(body({ schema: { content: "{}" } })).schema).toEqual({ content: "{}", kwargs: {} });
    expect(StateDeclarationBody.parse(body({ schema: { id: "res-1", kwargs: { a: 1 } } })).schema).toEqual({ id: "res-1", kwargs: { a: 1 } });
    // Not TemplatedText-shaped: no string content/id, or another key beside them.
    expect(StateDeclarationBody.parse(body({ schema: { id: 5 } })).schema).toEqual({ id: 5 });
    expect(StateDeclarationBody.parse(body({ schema: { content: "x", type: "object" } })).schema).toEqual({ content: "x", type: "object" });
  });

  it("refuses a TemplatedText-shaped schema that is not a valid TemplatedText, saying why", () => {
    expect(refusal(body({ schema: { content: "x", id: "y" } }))).toContain("exactly one of content or id");
    expect(refusal(body({ schema: { content: "x", kwargs: [] } }))).toContain("TemplatedText");
  });

  it("judges a raw schema as a raw schema: an over-bound one is refused for its bound", () => {
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 70; i++) deep = { type: "object", properties: { a: deep } };
    const text = refusal(body({ schema: deep }));
    expect(text).toContain("schema: must nest at most 64 levels");
    expect(text).not.toContain("TemplatedText");
    expect(refusal(body({ schema: { type: "object", big: "x".repeat(70_000) } }))).toContain("bytes as compact JSON");
  });

  it("refuses a schema that is neither an object nor a TemplatedText", () => {
    for (const schema of ["SECRET", 3, null, []]) expect(refusal(body({ schema }))).toContain("must be a JSON Schema object or a TemplatedText");
  });

  it("refuses a bad kind pattern, duplicate kinds, empty or too many kinds", () => {
    expect(refusal(body({ subject_kinds: ["Person-SECRET"] }))).toContain("subject_kinds.0: must match");
    expect(refusal(body({ subject_kinds: ["person", "person"] }))).toContain("must not list a subject kind twice");
    expect(refusal(body({ subject_kinds: [] }))).toContain("at least one subject kind");
    expect(refusal(body({ subject_kinds: Array.from({ length: 33 }, (_, i) => `k${i}`) }))).toContain("at most 32");
    expect(refusal({ schema: base() })).toContain("subject_kinds");
  });

  it("refuses a default kind that is not among subject_kinds", () => {
    const text = refusal(body({ default_subject_kind: "secretkind" }));
    expect(text).toContain("default_subject_kind: must be one of subject_kinds");
    expect(text).not.toContain("secretkind");
    expect(refusal(body({ default_subject_kind: "Bad!" }))).toContain("default_subject_kind");
  });

  it("refuses retention_days of 0, above the bound, or not an integer", () => {
    expect(refusal(body({ retention_days: 0 }))).toContain("retention_days: must be at least 1");
    expect(refusal(body({ retention_days: -5 }))).toContain("retention_days");
    expect(refusal(body({ retention_days: 1_073_741_824 }))).toContain("retention_days: must be at most 1073741823");
    expect(refusal(body({ retention_days: 1.5 }))).toContain("retention_days");
    expect(refusal(body({ retention_days: "30" }))).toContain("retention_days");
    expect(StateDeclarationBody.parse(body({ retention_days: 1_073_741_823 })).retention_days).toBe(1_073_741_823);
  });

  it("refuses a non-null computed field, naming it and not its value", () => {
    for (const field of ["effective_schema", "regimes", "updated_at"]) {
      const text = refusal(body({ [field]: { SECRET: 1 } }));
      expect(text).toContain(`${field}: is`);
      expect(text).toContain("by the platform");
      expect(text).not.toContain("SECRET");
    }
  });

  it("refuses an unknown key and an over-long description", () => {
    expect(refusal(body({ extra: 1 }))).toContain("Unrecognized key");
    expect(refusal(body({ description: "x".repeat(2001) }))).toContain("description");
  });
});

describe("checkBaseSchema", () => {
  it("accepts an object-rooted schema with properties and local refs", () => {
    expect(checkBaseSchema(base())).toBeNull();
    const withRefs = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: { tag: { $anchor: "tag", type: "string" }, list: { type: "array", items: { $ref: "#tag" } } },
      properties: { tags: { $ref: "#/$defs/list" }, self: { $ref: "#" }, $ref: { type: "string" } },
    };
    expect(checkBaseSchema(withRefs)).toBeNull();
  });

  it("does not tag or change the schema it checks", () => {
    const schema = { type: "object", $defs: { a: { type: "string" } }, properties: { a: { $ref: "#/$defs/a" } } };
    const before = JSON.stringify(schema);
    expect(checkBaseSchema(schema)).toBeNull();
    expect(JSON.stringify(schema)).toBe(before);
    expect(Object.getOwnPropertyNames(schema.properties.a)).toEqual(["$ref"]);
  });

  it("refuses what is not a JSON object", () => {
    for (const s of [null, "x", [], true, 1]) expect(checkBaseSchema(s)).toBe("schema must be a JSON object");
  });

  it("refuses a root that is not type object", () => {
    expect(checkBaseSchema({ properties: { a: {} } })).toContain('"type": "object"');
    expect(checkBaseSchema({ type: "array", items: {} })).toContain('"type": "object"');
    expect(checkBaseSchema({ type: ["object"], properties: { a: {} } })).toContain('"type": "object"');
  });

  it("refuses zero properties", () => {
    expect(checkBaseSchema({ type: "object" })).toContain("at least one property");
    expect(checkBaseSchema({ type: "object", properties: {} })).toContain("at least one property");
  });

  it("refuses a remote $ref, at the root and nested anywhere", () => {
    const remote = "https://evil.example/SECRET.json";
    expect(checkBaseSchema({ type: "object", properties: { a: { $ref: remote } } })).toContain("$ref must be local");
    expect(checkBaseSchema({ type: "object", $ref: "other.json", properties: { a: {} } })).toContain("$ref must be local");
    const nested = { type: "object", properties: { a: { type: "array", items: { anyOf: [{ type: "string" }, { properties: { b: { $ref: remote } } }] } } } };
    expect(checkBaseSchema(nested)).toContain("$ref must be local");
    expect(checkBaseSchema({ type: "object", properties: { a: {} }, "x-extension": { deep: [{ $ref: remote }] } })).toContain("$ref must be local");
    expect(checkBaseSchema(nested)).not.toContain("SECRET");
  });

  it("does not read data keywords as refs", () => {
    const data = { $ref: "https://example.com/x" };
    expect(checkBaseSchema({ type: "object", properties: { a: { const: data, default: data, enum: [data], examples: [data] } } })).toBeNull();
  });

  it("refuses $dynamicRef anywhere", () => {
    expect(checkBaseSchema({ type: "object", properties: { a: { $dynamicRef: "#meta" } } })).toContain("$dynamicRef");
    expect(checkBaseSchema({ type: "object", $defs: { x: { items: { $dynamicRef: "#x" } } }, properties: { a: {} } })).toContain("$dynamicRef");
  });

  it("refuses a local $ref that resolves to nothing", () => {
    expect(checkBaseSchema({ type: "object", properties: { a: { $ref: "#/$defs/missing" } } })).toContain("does not resolve");
    expect(checkBaseSchema({ type: "object", properties: { a: { $ref: "#no-such-anchor" } } })).toContain("does not resolve");
  });

  it("refuses keywords that are not draft 2020-12 in form", () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ minLength: -1 }, "minLength"],
      [{ type: "text" }, "type"],
      [{ required: ["a", "a"] }, "required"],
      [{ items: [{ type: "string" }] }, "items"],
      [{ anyOf: [] }, "anyOf"],
      [{ properties: { b: 3 } }, "properties"],
      [{ multipleOf: 0 }, "multipleOf"],
    ];
    for (const [sub, keyword] of cases) {
      const text = checkBaseSchema({ type: "object", properties: { a: sub } });
      expect(text, keyword).toContain("draft 2020-12");
      expect(text, keyword).toContain(keyword);
    }
    expect(checkBaseSchema({ $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { a: {} } })).toContain("$schema");
    // A keyword named like an Object.prototype member is just an unknown keyword.
    expect(checkBaseSchema({ type: "object", properties: { a: { constructor: 1, toString: "x" } } })).toBeNull();
  });

  it("refuses a pattern outside RE2 syntax", () => {
    expect(checkBaseSchema({ type: "object", properties: { a: { type: "string", pattern: "^(a)\\1$" } } })).toContain("RE2");
  });

  it("refuses a schema deeper than 64 levels", () => {
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 70; i++) deep = { type: "object", properties: { a: deep } };
    expect(checkBaseSchema(deep)).toContain("64 levels");
  });
});

describe("canonicalJson", () => {
  it("sorts keys at every level and writes compact JSON", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ b: 1, a: 2 })).toBe(canonicalJson({ a: 2, b: 1 }));
    expect(canonicalJson("x")).toBe('"x"');
    expect(canonicalJson([])).toBe("[]");
  });
});

describe("isNarrowing", () => {
  it("accepts the same schema and added properties", () => {
    expect(isNarrowing(base(), base())).toBeNull();
    const added = base();
    (added.properties as Record<string, unknown>).nickname = { type: "string" };
    expect(isNarrowing(base(), added)).toBeNull();
  });

  it("accepts reordered keys (compared canonically)", () => {
    const reordered = {
      additionalProperties: false,
      required: ["name"],
      properties: { visits: { minimum: 0, type: "integer" }, name: { type: "string" } },
      type: "object",
    };
    expect(isNarrowing(base(), reordered)).toBeNull();
  });

  it("refuses a removed property", () => {
    const s = base();
    delete (s.properties as Record<string, unknown>).visits;
    expect(isNarrowing(base(), s)).toBe("an existing property was removed or changed");
  });

  it("refuses a changed property, without naming it", () => {
    const s = base();
    s.properties.visits = { type: "integer", minimum: 1 };
    const why = isNarrowing(base(), s);
    expect(why).toBe("an existing property was removed or changed");
    expect(why).not.toContain("visits");
  });

  it("refuses a changed, added or removed root keyword", () => {
    expect(isNarrowing(base(), { ...base(), required: ["name", "visits"] })).toBe("a root keyword other than properties changed");
    expect(isNarrowing(base(), { ...base(), required: ["name"], $defs: { x: {} } })).toBe("a root keyword other than properties changed");
    const { additionalProperties: _dropped, ...loosened } = base();
    expect(isNarrowing(base(), loosened)).toBe("a root keyword other than properties changed");
  });
});

describe("removedKinds", () => {
  it("lists old kinds missing from the new list, once each", () => {
    expect(removedKinds(["person", "thread", "team"], ["thread"])).toEqual(["person", "team"]);
    expect(removedKinds(["person"], ["person", "team"])).toEqual([]);
    expect(removedKinds(["a", "a"], [])).toEqual(["a"]);
  });
});
