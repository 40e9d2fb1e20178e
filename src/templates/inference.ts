/**
 * What a template references (docs/templates.md "Variables"), pure: the names a mustache template
 * reads, found by parsing it (mustache's own parser), and a JSON Schema of the view they imply.
 *
 * - `{{a.b}}`, `{{{a}}}`, `{{&a}}` read a value; `{{#s}}…{{/s}}` a section (a list is iterated, an
 *   object entered, a truthy value shows the block); `{{^s}}…{{/s}}` an inverted section.
 * - A name inside a section is listed with the sections around it (`within`). Mustache looks it up
 *   in the section's item first and then outwards, so the schema places it under the section's
 *   item, as the likelier reading.
 * - `{{.}}` (the current item), comments and partials are not variables (partials render empty
 *   here: there is no partial registry).
 */
import Mustache from "mustache";
import { z } from "zod";

export const TemplateVariable = z
  .object({
    name: z.string(),
    kind: z.enum(["value", "section", "inverted_section"]),
    within: z.array(z.string()),
  })
  .strict();
export type TemplateVariable = z.infer<typeof TemplateVariable>;

type Token = [string, string, number, number, Token[]?, number?];
type Schema = { [k: string]: unknown };

/** Parses `template` (mustache, default `{{ }}` tags); null when it does not parse. */
export function parseMustache(template: string): Token[] | null {
  try {
    // A fresh writer: the parse must not land in the shared render cache.
    return new Mustache.Writer().parse(template) as Token[];
  } catch {
    return null;
  }
}

/** The variables of parsed tokens, in order of first appearance, each (name, kind, within) once. */
export function variablesOf(tokens: Token[]): TemplateVariable[] {
  const out: TemplateVariable[] = [];
  const seen = new Set<string>();
  const add = (v: TemplateVariable) => {
    const k = JSON.stringify([v.name, v.kind, v.within]);
    if (!seen.has(k)) {
      seen.add(k);
      out.push(v);
    }
  };
  const walk = (list: Token[], within: string[]) => {
    for (const t of list) {
      const [type, value] = t;
      if ((type === "name" || type === "&") && value !== ".") add({ name: value, kind: "value", within });
      else if (type === "#" || type === "^") {
        add({ name: value, kind: type === "#" ? "section" : "inverted_section", within });
        walk(t[4] ?? [], type === "#" ? [...within, value] : within);
      }
    }
  };
  walk(tokens, []);
  return out;
}

function objectSchema(): Schema {
  return { type: "object", properties: {} };
}

/** The schema node at dotted `name` under `root`, created as objects on the way. */
function nodeAt(root: Schema, name: string): Schema {
  let node = root;
  const parts = name.split(".");
  for (const [i, part] of parts.entries()) {
    const props = (node.properties ??= {}) as Record<string, Schema>;
    if (i === parts.length - 1) return (props[part] ??= {});
    const next = (props[part] ??= objectSchema());
    if (next.type !== "object" && !next.anyOf) Object.assign(next, objectSchema());
    node = next.anyOf ? ((next.anyOf as Schema[])[2] ?? next) : next;
  }
  return node;
}

/** The item schema of a section node (made a section on first use). */
function sectionItem(node: Schema): Schema {
  if (!node.anyOf) {
    const item = objectSchema();
    for (const k of Object.keys(node)) delete node[k];
    Object.assign(node, { anyOf: [{ type: "boolean" }, { type: "array", items: item }, item] });
  }
  return (node.anyOf as Schema[])[2];
}

/**
 * A JSON Schema (draft 2020-12) of the view the variables imply: an object whose properties are
 * the names read; a dotted name nests objects; a section is a boolean, a list of items or one item
 * object, its inner names being the item's properties. Leaves are `{}` (mustache renders any value).
 */
export function schemaOf(variables: TemplateVariable[]): Schema {
  const root = objectSchema();
  const sectionNode = new Map<string, Schema>();
  const parentOf = (within: string[]): Schema => {
    if (!within.length) return root;
    const key = JSON.stringify(within);
    const known = sectionNode.get(key);
    if (known) return sectionItem(known);
    const node = nodeAt(parentOf(within.slice(0, -1)), within[within.length - 1]);
    sectionNode.set(key, node);
    return sectionItem(node);
  };
  for (const v of variables) {
    const parent = parentOf(v.within);
    const node = nodeAt(parent, v.name);
    if (v.kind === "section") {
      sectionNode.set(JSON.stringify([...v.within, v.name]), node);
    }
  }
  return root;
}

export const TemplateAnalysis = z.object({ variables: z.array(TemplateVariable), schema: z.record(z.string(), z.unknown()) }).strict();
export type TemplateAnalysis = z.infer<typeof TemplateAnalysis>;

/** Variables and schema of a template, or null when it does not parse. */
export function analyzeTemplate(template: string): TemplateAnalysis | null {
  const tokens = parseMustache(template);
  if (!tokens) return null;
  const variables = variablesOf(tokens);
  return { variables, schema: schemaOf(variables) };
}
