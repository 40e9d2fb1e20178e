/**
 * jq on jq-wasm, usable from the Worker and from Durable Objects.
 *
 * jq-wasm runs jq's command-line `main` once per call over stdin. We wrap every program as
 * `try ([ (PROGRAM) ] | {ok: .}) catch {err: .}` so that one call yields one compact JSON
 * line holding either all outputs or the runtime error: jq-wasm itself would otherwise drop
 * an error raised after the first output. A program that does not compile produces no
 * stdout and its diagnostic on stderr, which we surface as a compile error.
 */
import jqFactory from "./generated/jq-glue.js";
import jqWasm from "./generated/jq.wasm";

export type JqErrorKind = "compile" | "runtime";

/** A jq failure: `compile` for a program jq refuses, `runtime` for an error while running. */
export class JqError extends Error {
  constructor(
    readonly kind: JqErrorKind,
    message: string,
  ) {
    super(message);
    this.name = "JqError";
  }
}

type JqModule = Awaited<ReturnType<typeof jqFactory>>;
let instance: Promise<JqModule> | null = null;

function getInstance(): Promise<JqModule> {
  instance ??= jqFactory({
    // Workers cannot compile wasm from bytes; the module arrives precompiled from the bundle.
    instantiateWasm(imports, receive) {
      WebAssembly.instantiate(jqWasm, imports).then((inst) => receive(inst));
      return {};
    },
    printErr() {
      /* diagnostics arrive through stderr capture; nothing to log */
    },
  });
  return instance;
}

/** Programs are compiled by jq on every run; we remember which ones compile so a known-bad
 * program fails without running and a known-good one skips the compile probe. */
const compileVerdicts = new Map<string, string | null>();
const MAX_REMEMBERED = 512;

function wrap(program: string): string {
  // Newlines keep a trailing `# comment` in the program from swallowing the wrapper.
  return `try ([ (\n${program}\n) ] | {ok: .}) catch {err: .}`;
}

function cleanDiagnostic(stderr: string): string {
  return stderr
    .split("\n")
    .map((l) => l.replace(/^jq: /, "").trim())
    .filter((l) => l && !l.startsWith("Use jq --help") && !/^\d+ compile errors?$/.test(l))
    .join("; ")
    .replace(/at <top-level>, line \d+:?/g, "")
    .replace(/\s+/g, " ")
    .trim() || "invalid jq program";
}

async function runRaw(inputJson: string, program: string): Promise<string> {
  const jq = await getInstance();
  try {
    return await jq.raw(inputJson, wrap(program), ["-c"]);
  } catch (err) {
    if (err instanceof Error && !(err instanceof WebAssembly.RuntimeError)) {
      // jq-wasm throws an Error carrying stderr when nothing reached stdout: compile failure.
      throw new JqError("compile", cleanDiagnostic(err.message));
    }
    // An abort (out of memory, trap) leaves the module unusable: start afresh next time.
    instance = null;
    throw new JqError("runtime", "jq aborted (resource limit)");
  }
}

/**
 * Runs `program` over `input` and returns every output value in order.
 * Throws JqError("compile") for a program jq refuses and JqError("runtime") for `error(...)`
 * or any other run-time failure.
 */
export async function jqRun(program: string, input: unknown): Promise<unknown[]> {
  const known = compileVerdicts.get(program);
  if (typeof known === "string") throw new JqError("compile", known);
  const inputJson = JSON.stringify(input ?? null);
  let out: string;
  try {
    out = await runRaw(inputJson, program);
  } catch (err) {
    if (err instanceof JqError && err.kind === "compile") remember(program, err.message);
    throw err;
  }
  remember(program, null);
  const line = out.trim().split("\n").pop() ?? "";
  let parsed: { ok?: unknown[]; err?: unknown };
  try {
    parsed = JSON.parse(line) as typeof parsed;
  } catch {
    throw new JqError("runtime", "jq produced unreadable output");
  }
  if (parsed && Array.isArray(parsed.ok)) return parsed.ok;
  const e = parsed?.err;
  throw new JqError("runtime", typeof e === "string" ? e : e === null || e === undefined ? "null (null)" : JSON.stringify(e));
}

function remember(program: string, verdict: string | null): void {
  if (compileVerdicts.size >= MAX_REMEMBERED) {
    const oldest = compileVerdicts.keys().next().value;
    if (oldest !== undefined) compileVerdicts.delete(oldest);
  }
  compileVerdicts.set(program, verdict);
}

/**
 * Checks that `program` compiles, without caring about its result. Running it over `null`
 * is how jq-wasm lets us compile; a run-time error there still means it compiled.
 */
export async function jqCompile(program: string): Promise<void> {
  try {
    await jqRun(program, null);
  } catch (err) {
    if (err instanceof JqError && err.kind === "compile") throw err;
  }
}

/** Runs `program` and requires exactly one output. */
export async function jqOne(program: string, input: unknown): Promise<unknown> {
  const outs = await jqRun(program, input);
  if (outs.length !== 1) {
    throw new JqError("runtime", `expected exactly one output, got ${outs.length}`);
  }
  return outs[0];
}
