/**
 * A hook's two jq programs (docs/hooks.md "Condition and expr"): each given as jq text
 * (`condition`, `expr`) or as a stored text resource rendered with its kwargs (`condition_id` +
 * `condition_kwargs`, `expr_id` + `expr_kwargs`), the TemplatedText of spec §2.6 as elsewhere.
 * Rendered and compiled once, at registration; the fires run the rendered text under the jq budget.
 * Evaluation never lets a value reach a reason: a skip says what kind of failure it was.
 */
import type { JsonObject } from "../platform/http/bounded-json";
import { HttpError, badRequest } from "../platform/http/errors";
import { JqError, jqCompile, jqRun } from "../platform/jq/engine";
import { renderTemplatedText } from "../templates/templated-text";

/** Renders and compiles one program; null when neither form was given. 400 naming the field otherwise. */
export async function hookProgram(
  db: D1Database,
  field: "condition" | "expr",
  text: string | undefined,
  id: string | undefined,
  kwargs: JsonObject | undefined,
): Promise<string | null> {
  let program: string;
  if (text !== undefined) program = text;
  else if (id !== undefined) {
    try {
      program = await renderTemplatedText(db, { id, kwargs: kwargs ?? {} });
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) throw badRequest(`invalid body: ${field}_id: its text resource does not exist`);
      if (err instanceof HttpError) throw badRequest(`invalid body: ${field}_id: the text resource does not render`);
      throw err;
    }
  } else return null;
  try {
    await jqCompile(program);
  } catch (err) {
    if (err instanceof JqError)
      throw badRequest(err.kind === "budget" ? `invalid body: ${field}: ${err.message}` : `invalid body: ${field}: jq program does not compile`);
    throw err;
  }
  return program;
}

export type Evaluation<T> = { ok: true; value: T } | { ok: false; reason: string };

function failure(what: string, err: unknown): { ok: false; reason: string } {
  if (err instanceof JqError) return { ok: false, reason: err.kind === "budget" ? `${what} exceeded the jq budget` : `${what} failed (jq ${err.kind} error)` };
  throw err;
}

/** Does the condition hold for `payload`? Exactly one output, `true`; no condition: always. */
export async function conditionHolds(program: string | null, payload: unknown): Promise<Evaluation<boolean>> {
  if (program === null) return { ok: true, value: true };
  try {
    const out = await jqRun(program, payload);
    return { ok: true, value: out.length === 1 && out[0] === true };
  } catch (err) {
    return failure("condition", err);
  }
}

/** The expr's tool input for `payload`: exactly one object; no expr: `{}`. */
export async function exprInput(program: string | null, payload: unknown): Promise<Evaluation<Record<string, unknown>>> {
  if (program === null) return { ok: true, value: {} };
  let out: unknown[];
  try {
    out = await jqRun(program, payload);
  } catch (err) {
    return failure("expr", err);
  }
  if (out.length !== 1) return { ok: false, reason: `expr must emit exactly one object; it emitted ${out.length} values` };
  const v = out[0];
  if (v === null || typeof v !== "object" || Array.isArray(v))
    return { ok: false, reason: `expr must emit an object; it emitted ${v === null ? "null" : Array.isArray(v) ? "an array" : `a ${typeof v}`}` };
  return { ok: true, value: v as Record<string, unknown> };
}
