/**
 * State templates: operator documents a state can attach. A template
 * carries a schema fragment (with `{"$parameter": p}` nodes filled in at attachment), its write
 * regimes, declarations, trace and reconcile settings, and named jq programs. D1 is their truth
 * (`state_templates`, migrations/0008_states.sql); attaching one to a state is not done here.
 *
 * Every object of the document is strict. Error messages name the field or rule, never a value:
 * an unknown field is named only when it is one of this document's own field names (a fixed
 * vocabulary), and an entry of a name → value map (`parameters`, `template_jq`) is named by its
 * position in the map (`template_jq.1.jq`), never by its name, since names are the caller's text.
 */
import { z } from "zod";
import { MAX_KWARGS_BYTES, MAX_SCHEMA_BYTES, boundedJsonObject, boundedJsonValue } from "../platform/http/bounded-json";
import { HttpError, conflict } from "../platform/http/errors";
import { JqError, jqCompile } from "../platform/jq/engine";
import { renderTemplate, templatedTextSchema } from "../templates/templated-text";
import { CountRow, type Statement, batch, d1, first, rowsOf, run, sql } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { Regime } from "./ops";

// ---------------------------------------------------------------------------------------------
// Names

export const TEMPLATE_NAME_PATTERN = /^[a-z](?:[a-z0-9]|-(?=[a-z0-9])){0,62}$/;
export const TEMPLATE_IDENTIFIER_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** A template's name (from the path): a lowercase slug, no `--`, no trailing `-`, ≤ 63 characters. */
export const TemplateName = z
  .string()
  .regex(TEMPLATE_NAME_PATTERN, { message: "must be a lowercase slug: a letter, then letters, digits and single inner hyphens (at most 63 characters)" });
export type TemplateName = z.infer<typeof TemplateName>;

/** A parameter or jq program name. */
export const TemplateIdentifier = z.string().regex(TEMPLATE_IDENTIFIER_PATTERN, { message: "must match ^[a-z_][a-z0-9_]{0,62}$" });

/** Most entries of `parameters` and of `template_jq` (each jq program is compiled on PUT). */
export const MAX_TEMPLATE_PARAMETERS = 64;
export const MAX_TEMPLATE_PROGRAMS = 64;
const MAX_DESCRIPTION = 2000;

// ---------------------------------------------------------------------------------------------
// Strictness without echoing

/** Every field name this document's objects take: the only unknown keys a message may name. */
const KNOWN_FIELDS = new Set([
  "kind",
  "name",
  "description",
  "parameters",
  "schema",
  "default",
  "regimes",
  "path",
  "regime",
  "declarations",
  "check",
  "content",
  "id",
  "kwargs",
  "trace",
  "template_jq",
  "purpose",
  "params",
  "reads",
  "writes",
  "jq",
  "reconcile",
]);

function strayMessage(keys: readonly PropertyKey[], hint?: (keys: string[]) => string | undefined): string {
  const names = keys.map(String);
  if (names.length && names.every((k) => KNOWN_FIELDS.has(k))) return hint?.(names) ?? `${names.join(", ")}: not taken here`;
  return "has a field it does not take";
}

/** zod's own message for an unknown key quotes it; this one names only known field names. */
const strict = <S extends z.core.$ZodLooseShape>(shape: S, hint?: (keys: string[]) => string | undefined) =>
  z.strictObject(shape, { error: (issue) => (issue.code === "unrecognized_keys" ? strayMessage(issue.keys, hint) : undefined) });

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * `schema` (strict, defined elsewhere with zod's default message) behind a key check of our own:
 * an unknown key stops the pipe here, so `schema` never reports (and quotes) it.
 */
function onlyKeys<T extends z.ZodType>(allowed: readonly string[], schema: T) {
  const keys = new Set(allowed);
  return z.preprocess((v, ctx) => {
    if (isPlainObject(v)) {
      const stray = Object.keys(v).filter((k) => !keys.has(k));
      if (stray.length) ctx.addIssue({ code: "custom", message: strayMessage(stray) });
    }
    return v;
  }, schema);
}

/**
 * A name → value map. Keys and values are checked first, entry by entry, with issues placed at
 * the entry's position (`parameters.0.schema`): a key is the caller's text and must not reach a
 * message. Any issue stops the pipe, so the record below (which types the output and renders the
 * OpenAPI document, `propertyNames` included) only sees entries that pass.
 */
function namedMap<V extends z.ZodType>(value: V, maxEntries: number, what: string) {
  return z.preprocess(
    (v, ctx) => {
      if (!isPlainObject(v)) return v; // the record reports the type
      const entries = Object.entries(v);
      if (entries.length > maxEntries) {
        ctx.addIssue({ code: "custom", message: `must hold at most ${maxEntries} ${what}` });
        return v;
      }
      entries.forEach(([key, item], n) => {
        if (!TEMPLATE_IDENTIFIER_PATTERN.test(key))
          ctx.addIssue({ code: "custom", path: [n], message: `the name of this entry must match ^[a-z_][a-z0-9_]{0,62}$` });
        const parsed = value.safeParse(item);
        for (const issue of parsed.success ? [] : parsed.error.issues) ctx.addIssue({ code: "custom", path: [n, ...issue.path], message: issue.message });
      });
      return v;
    },
    z.record(TemplateIdentifier, value),
  );
}

// ---------------------------------------------------------------------------------------------
// The document

const description = z.string().max(MAX_DESCRIPTION, { message: `must be at most ${MAX_DESCRIPTION} characters` });
const jsonObject = boundedJsonObject(MAX_SCHEMA_BYTES);

const TemplateParameter = strict({
  schema: jsonObject,
  default: boundedJsonValue(MAX_KWARGS_BYTES).optional(),
});

const TemplateRegime = onlyKeys(["path", "regime"], Regime);
const ProgramText = onlyKeys(["content", "id", "kwargs"], templatedTextSchema);
const KeyPath = z.array(z.string());

const programFieldHint = (only: "input" | "update") => (keys: string[]) =>
  keys.every((k) => (only === "input" ? k === "reads" || k === "writes" : k === "params"))
    ? `${keys.join(", ")}: taken only by ${only === "input" ? "an update" : "an input"} program`
    : undefined;

const InputProgram = strict(
  {
    purpose: z.literal("input"),
    description: description.default(""),
    params: z.array(z.string()).default([]),
    jq: ProgramText,
  },
  programFieldHint("input"),
);

const UpdateProgram = strict(
  {
    purpose: z.literal("update"),
    description: description.default(""),
    reads: z.array(KeyPath).default([]),
    writes: z.array(KeyPath).default([]),
    jq: ProgramText,
  },
  programFieldHint("update"),
);

export const TemplateProgram = z.discriminatedUnion("purpose", [InputProgram, UpdateProgram], { error: () => 'must be "input" or "update"' });
export type TemplateProgram = z.infer<typeof TemplateProgram>;

const Declarations = strict({
  schema: jsonObject.optional(),
  check: strict({ content: z.string() }).optional(),
});

/** The string value of a `$parameter` key, when `node` holds one. */
function parameterRef(node: Record<string, unknown>): string | null {
  return Object.hasOwn(node, "$parameter") && typeof node.$parameter === "string" ? node.$parameter : null;
}

/**
 * Why the fragment's parameter references are wrong, or null. An object holding a string
 * `$parameter` is a reference: it must hold nothing else (substitution replaces the whole node)
 * and name a declared parameter. Iterative; the fragment is already bounded.
 */
export function parameterRefProblem(fragment: unknown, declared: ReadonlySet<string>): string | null {
  const stack: unknown[] = [fragment];
  while (stack.length) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    if (!isPlainObject(node)) continue;
    const ref = parameterRef(node);
    if (ref !== null) {
      if (Object.keys(node).length !== 1) return 'a {"$parameter": …} node must hold no other key';
      if (!declared.has(ref)) return 'a {"$parameter": …} node names a parameter that is not declared';
      continue;
    }
    stack.push(...Object.values(node));
  }
  return null;
}

/**
 * The body of `PUT /api/state-templates/{name}` and the stored document. `name`, when sent,
 * must equal the path's (the door checks; the stored document always carries it). jq programs
 * are compiled by `checkTemplatePrograms`, which is async.
 */
export const StateTemplateDocument = strict({
  kind: z.literal("state-template", { error: 'must be "state-template"' }),
  name: z.string().optional(),
  description: description.default(""),
  parameters: namedMap(TemplateParameter, MAX_TEMPLATE_PARAMETERS, "parameters").default({}),
  schema: jsonObject,
  regimes: z.array(TemplateRegime).default([]),
  declarations: Declarations.default({}),
  trace: jsonObject.default({}),
  template_jq: namedMap(TemplateProgram, MAX_TEMPLATE_PROGRAMS, "programs").default({}),
  reconcile: jsonObject.default({}),
}).superRefine((doc, ctx) => {
  if (!isPlainObject(doc.parameters) || !isPlainObject(doc.schema)) return;
  const problem = parameterRefProblem(doc.schema, new Set(Object.keys(doc.parameters)));
  if (problem) ctx.addIssue({ code: "custom", path: ["schema"], message: problem });
});
export type StateTemplateDocument = z.infer<typeof StateTemplateDocument>;

/** Whether `program` compiles as jq: null, or why not (never the compiler's text, which quotes it). */
async function compileProblem(program: string): Promise<string | null> {
  try {
    await jqCompile(program);
    return null;
  } catch (err) {
    if (err instanceof JqError) return err.kind === "budget" ? "could not be compiled within the jq budget" : "does not compile as jq";
    throw err;
  }
}

/**
 * The checks zod cannot make: each `template_jq` program given as `content`, rendered with
 * mustache using its own kwargs, compiles as jq the way it will run (an input program with
 * `$params` bound; one given by `id` is resolved only when used), and `declarations.check`
 * compiles. Returns the first problem (naming the field, a program by its
 * position) or null.
 */
export async function checkTemplatePrograms(doc: StateTemplateDocument): Promise<string | null> {
  const programs = Object.values(doc.template_jq);
  for (const [n, program] of programs.entries()) {
    const content = program.jq.content;
    if (content === undefined || content === null) continue;
    let rendered: string;
    try {
      rendered = renderTemplate(content, program.jq.kwargs ?? {});
    } catch (err) {
      if (err instanceof HttpError) return `template_jq.${n}.jq: does not parse as mustache`;
      throw err;
    }
    // As they run (src/states/template-jq.ts): an input program with `$params` bound in front.
    const problem = await compileProblem(program.purpose === "input" ? `({}) as $params | ${rendered}` : rendered);
    if (problem) return `template_jq.${n}.jq: ${problem}`;
  }
  const check = doc.declarations.check;
  if (check) {
    const problem = await compileProblem(check.content);
    if (problem) return `declarations.check.content: ${problem}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// D1

/** The document as stored and served: `name` set to the template's, right after `kind`. */
export function namedDocument(doc: StateTemplateDocument, name: string): StateTemplateDocument {
  const { kind, name: _sent, ...rest } = doc;
  return { kind, name, ...rest };
}

export const templateNotFound = () => new HttpError(404, "state template not found");

/**
 * The insert of `doc` under `name` (the stored document's `name` set to it) as a statement. What
 * it does to an existing row differs on purpose between its callers: "keep" leaves the row as it
 * is, for the template door, which must tell a create from a replace and refuses a replace it was
 * not asked for (it updates in a second step); "replace" replaces the document and `updated_at`
 * and keeps `created_at`, for a backup import, which writes every row of its section in one batch
 * with the times its document carries.
 */
export function insertTemplateStatement(
  db: D1Database,
  name: string,
  doc: StateTemplateDocument,
  createdAt: string,
  updatedAt: string,
  onConflict: "keep" | "replace",
): Statement {
  const conflictAction = onConflict === "keep" ? sql`NOTHING` : sql`UPDATE SET document = excluded.document, updated_at = excluded.updated_at`;
  return d1(db)`INSERT INTO state_templates (name, document, created_at, updated_at)
    VALUES (${name}, ${JSON.stringify(namedDocument(doc, name))}, ${createdAt}, ${updatedAt}) ON CONFLICT (name) DO ${conflictAction}`;
}

const DocumentRow = z.object({ document: z.string() });

/**
 * Stores `doc` under `name` (the document's `name` set to it). A new name is created; an existing
 * one is replaced only with `replace`, else 409.
 */
export async function putTemplate(db: D1Database, name: string, doc: StateTemplateDocument, replace: boolean, nowIso: string): Promise<{ created: boolean }> {
  const document = JSON.stringify(namedDocument(doc, name));
  // Insert-or-nothing, then update: a row deleted between the two is inserted on the next round.
  for (let round = 0; round < 3; round++) {
    const inserted = await run(insertTemplateStatement(db, name, doc, nowIso, nowIso, "keep"));
    if (inserted.changes > 0) return { created: true };
    if (!replace) throw conflict("state template already exists; PUT with ?replace=true to replace it");
    const updated = await run(d1(db)`UPDATE state_templates SET document = ${document}, updated_at = ${nowIso} WHERE name = ${name}`);
    if (updated.changes > 0) return { created: false };
  }
  throw conflict("state template changed concurrently; retry");
}

export async function getTemplate(db: D1Database, name: string): Promise<StateTemplateDocument | null> {
  const row = await first(DocumentRow, d1(db)`SELECT document FROM state_templates WHERE name = ${name}`);
  return row ? parseStored(StateTemplateDocument, row.document, "state_templates.document") : null;
}

/** The listing, in name order. */
export async function listTemplates(db: D1Database, offset: number, limit: number): Promise<{ items: StateTemplateDocument[]; total: number }> {
  const q = d1(db);
  const stmts = [q`SELECT document FROM state_templates ORDER BY name LIMIT ${limit} OFFSET ${offset}`, q`SELECT COUNT(*) AS n FROM state_templates`];
  const [rows, count] = await batch(db, stmts);
  const [n] = rowsOf(CountRow, count?.results ?? [], stmts[1]?.text ?? "");
  return {
    items: rowsOf(DocumentRow, rows?.results ?? [], stmts[0]?.text ?? "").map((r) =>
      parseStored(StateTemplateDocument, r.document, "state_templates.document"),
    ),
    total: n?.n ?? 0,
  };
}

/** Deletes the template; false when there was none. */
export async function deleteTemplate(db: D1Database, name: string): Promise<boolean> {
  const r = await run(d1(db)`DELETE FROM state_templates WHERE name = ${name}`);
  return r.changes > 0;
}
