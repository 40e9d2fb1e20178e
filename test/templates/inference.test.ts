/** Template variable inference (docs/templates.md "Variables"), pure. */
import { describe, expect, it } from "vitest";
import { analyzeTemplate, parseMustache, schemaOf, variablesOf } from "../../src/templates/inference";
import { must } from "../../src/platform/must";

const vars = (t: string) => variablesOf(must(parseMustache(t), "parseMustache(t)"));

describe("variables", () => {
  it("lists values, sections and inverted sections once each, in order, with the sections around them", () => {
    expect(vars("Hi {{name}}, {{{raw}}} {{&amp}} {{name}} {{user.email}}")).toEqual([
      { name: "name", kind: "value", within: [] },
      { name: "raw", kind: "value", within: [] },
      { name: "amp", kind: "value", within: [] },
      { name: "user.email", kind: "value", within: [] },
    ]);
    expect(vars("{{#items}}- {{title}} {{.}}{{#tags}}{{label}}{{/tags}}{{/items}}{{^items}}none {{empty_note}}{{/items}}")).toEqual([
      { name: "items", kind: "section", within: [] },
      { name: "title", kind: "value", within: ["items"] },
      { name: "tags", kind: "section", within: ["items"] },
      { name: "label", kind: "value", within: ["items", "tags"] },
      { name: "items", kind: "inverted_section", within: [] },
      { name: "empty_note", kind: "value", within: [] },
    ]);
  });

  it("ignores comments, partials and the current item", () => {
    expect(vars("{{! a comment }}{{> header}}{{#list}}{{.}}{{/list}}")).toEqual([{ name: "list", kind: "section", within: [] }]);
  });

  it("a template that does not parse has no analysis", () => {
    expect(analyzeTemplate("{{#open}} never closed")).toBeNull();
    expect(analyzeTemplate("{{/closed}}")).toBeNull();
  });
});

describe("the inferred schema", () => {
  it("nests dotted names and makes a section a boolean, a list of items or one item", () => {
    const a = must(
      analyzeTemplate("{{user.name}} {{user.email}} {{#items}}{{title}}{{/items}} {{#flag}}on{{/flag}} {{count}}"),
      'analyzeTemplate("{{user.name}} {{user.…',
    );
    expect(a.schema).toEqual({
      type: "object",
      properties: {
        user: { type: "object", properties: { name: {}, email: {} } },
        items: {
          anyOf: [{ type: "boolean" }, { type: "array", items: { type: "object", properties: { title: {} } } }, { type: "object", properties: { title: {} } }],
        },
        flag: {},
        count: {},
      },
    });
  });

  it("nested sections nest their items", () => {
    const s = schemaOf(vars("{{#a}}{{#b}}{{c}}{{/b}}{{/a}}"));
    const item = (s.properties as any).a.anyOf[2];
    expect(item.properties.b.anyOf[2]).toEqual({ type: "object", properties: { c: {} } });
  });
});
