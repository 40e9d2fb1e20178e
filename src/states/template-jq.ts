/**
 * Template jq programs (platform-facts B5): the programs an attached template carries,
 * named `name` or `<template>.<name>`. An input-purpose program reads the record (the part at its
 * attachment's path) with `$params` bound and writes nothing; an update-purpose program maps
 * `{record, input}` to an op batch relative to its attachment's path, applied through the state's
 * ordinary write path (regimes and schema enforced). Every run is under the jq budget.
 */
import { z } from "zod";
import type { Env } from "../platform/env";
import { HttpError, badRequest } from "../platform/http/errors";
import type { JsonObject, JsonValue } from "../platform/http/bounded-json";
import { JqError, jqRun } from "../platform/jq/engine";
import { type TemplatedText, renderTemplatedText, templatedTextSchema } from "../templates/templated-text";
import type { StoredAttachment } from "./effective";
import { DeltaOp, MAX_OPS } from "./ops";

/** A program as a template document declares it (src/states/templates.ts holds the document schema). */
export const StoredProgram = z.object({
  purpose: z.enum(["input", "update"]),
  params: z.array(z.string()).optional(),
  jq: templatedTextSchema,
});
export type StoredProgram = z.infer<typeof StoredProgram>;

export interface ResolvedProgram {
  /** The name as referenced. */
  name: string;
  template: string;
  path: string[];
  program: StoredProgram;
}

/** Finds program `ref` (`name` or `<template>.<name>`) among the attachments: 404 unknown, 400 ambiguous. */
export function resolveProgram(attachments: StoredAttachment[], ref: string): ResolvedProgram {
  const dot = ref.indexOf(".");
  const candidates: ResolvedProgram[] = [];
  for (const a of attachments) {
    const programName = dot >= 0 ? (a.template === ref.slice(0, dot) ? ref.slice(dot + 1) : null) : ref;
    if (programName === null || !Object.hasOwn(a.programs, programName)) continue;
    const parsed = StoredProgram.safeParse(a.programs[programName]);
    if (parsed.success) candidates.push({ name: ref, template: a.template, path: a.path, program: parsed.data });
  }
  if (candidates.length === 0) throw new HttpError(404, "template jq program not found on this state's attachments");
  if (candidates.length > 1) throw badRequest("the program name is attached by more than one template; name it as <template>.<name>");
  return candidates[0];
}

/** The part of a record an attachment owns: the value at its path (the whole record for the root path). */
export function partAt(record: JsonObject, path: string[]): JsonValue {
  let cur: JsonValue = record;
  for (const key of path) {
    if (cur === null || typeof cur !== "object" || Array.isArray(cur) || !Object.hasOwn(cur, key)) return null;
    cur = cur[key];
  }
  return cur;
}

async function programText(env: Env, jq: TemplatedText): Promise<string> {
  return renderTemplatedText(env.DB, jq);
}

/** Runs a jq program, its failures as the caller's error (a 400 at a door, the turn's error outcome in a turn). */
export async function runProgram(program: string, input: unknown, what: string): Promise<unknown[]> {
  try {
    return await jqRun(program, input);
  } catch (err) {
    if (err instanceof JqError) throw new TemplateJqError(`${what} failed (${err.kind}): ${err.message}`);
    throw err;
  }
}

/** A template or binding program that failed: loud at a door (400) and in a turn (error outcome). */
export class TemplateJqError extends Error {}

/** An input-purpose program's value over `record`, with `$params` bound. */
export async function runInputProgram(env: Env, p: ResolvedProgram, record: JsonObject, params: JsonObject): Promise<JsonValue> {
  if (p.program.purpose !== "input") throw badRequest("the program is not an input-purpose program");
  const declared = new Set(p.program.params ?? []);
  for (const name of Object.keys(params)) if (!declared.has(name)) throw badRequest("a query parameter is not one of the program's params");
  const text = await programText(env, p.program.jq);
  // `$params` is bound by a JSON literal in front of the program: no string is spliced into jq code.
  const out = await runProgram(`(${JSON.stringify(params)}) as $params | ${text}`, partAt(record, p.path), "the template jq program");
  return (out[0] ?? null) as JsonValue;
}

const OpBatch = z.array(DeltaOp).max(MAX_OPS);

/** Reads a program's output as an op batch; paths are made absolute under `prefix`. */
export function opsFrom(output: unknown, prefix: string[], what: string): DeltaOp[] {
  const parsed = OpBatch.safeParse(output ?? []);
  if (!parsed.success)
    throw new TemplateJqError(
      `${what} must answer a list of ops (${parsed.error.issues
        .slice(0, 2)
        .map((i) => `${i.path.join(".")}: ${i.message}`)
        .join("; ")})`,
    );
  return parsed.data.map((op) => ({ ...op, path: [...prefix, ...op.path] }) as DeltaOp);
}

/** An update-purpose program's op batch over `{record, input}`, paths made absolute. */
export async function runUpdateProgram(env: Env, p: ResolvedProgram, record: JsonObject, input: JsonValue): Promise<DeltaOp[]> {
  if (p.program.purpose !== "update") throw badRequest("the program is not an update-purpose program");
  const text = await programText(env, p.program.jq);
  const out = await runProgram(text, { record: partAt(record, p.path), input }, "the template jq program");
  return opsFrom(out[0], p.path, "the template jq program");
}
