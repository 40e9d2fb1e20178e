/**
 * jq on jq-wasm, usable from the Worker and from Durable Objects, always under a budget.
 *
 * jq-wasm runs jq's command-line `main` once per call over stdin. We wrap every program as
 * `try ([ (PROGRAM) ] | {ok: .}) catch {err: .}` so that one call yields one compact JSON
 * line holding either all outputs or the runtime error: jq-wasm itself would otherwise drop
 * an error raised after the first output. A program that does not compile produces no
 * stdout and its diagnostic on stderr, which we surface as a compile error.
 *
 * The budget: the wasm is metered at build time (scripts/jq-metering.mjs), so every run gets a
 * number of steps (function entries, loop iterations, returns) and traps when they run out;
 * deep C recursion traps before it leaves jq's stack; the heap may only grow to the memory
 * budget. A timer could not do this: synchronous wasm cannot be interrupted, and workerd
 * enforces no CPU limit locally. A trapped or aborted instance is thrown away and the next run
 * starts a fresh one, so one bad program never poisons the next.
 */
import jqFactory from "./generated/jq-glue.js";
import jqWasm from "./generated/jq.wasm";
import { DEFAULT_JQ_BUDGET, type JqBudget } from "./budget";

export type { JqBudget } from "./budget";

export type JqErrorKind = "compile" | "runtime" | "budget";

/**
 * A jq failure: `compile` for a program jq refuses, `runtime` for an error while running,
 * `budget` when the run exceeded its steps, stack or memory (the message starts with
 * "jq budget exceeded").
 */
export class JqError extends Error {
  constructor(
    readonly kind: JqErrorKind,
    message: string,
  ) {
    super(message);
    this.name = "JqError";
  }
}

let budget: JqBudget = { ...DEFAULT_JQ_BUDGET };

/** Sets the budget for every later run in this isolate (called with the parsed settings). */
export function setJqBudget(next: JqBudget): void {
  if (next.steps === budget.steps && next.memoryMb === budget.memoryMb) return;
  budget = { steps: next.steps, memoryMb: next.memoryMb };
  instance = null; // the heap cap is fixed when an instance starts
}

/** The budget in force (for messages and tests). */
export function currentJqBudget(): Readonly<JqBudget> {
  return budget;
}

/** Trap codes the metering writes into the exported `jq_trap` global (scripts/jq-metering.mjs). */
const TRAP_STEPS = 1;
const TRAP_STACK = 2;

interface MeteredExports {
  jq_fuel: WebAssembly.Global;
  jq_trap: WebAssembly.Global;
  jq_stack_pointer: WebAssembly.Global;
}

type JqModule = Awaited<ReturnType<typeof jqFactory>>;
let instance: Promise<JqModule> | null = null;

/** Thrown out of jq's main by the run guard when a budget ran out; `runRaw` turns it into a JqError. */
class BudgetTrap extends Error {}
/** Anything else that escaped jq's main mid-run (an abort, a trap, a host error). */
class RunAborted extends Error {}

function startInstance(): Promise<JqModule> {
  let exportsOf: MeteredExports | null = null;
  let heapExhausted = false;
  const own = budget;
  const started = jqFactory({
    heapMax: own.memoryMb * 1024 * 1024,
    // Workers cannot compile wasm from bytes; the module arrives precompiled from the bundle.
    instantiateWasm(imports, receive) {
      WebAssembly.instantiate(jqWasm, imports).then((inst) => {
        exportsOf = inst.exports as unknown as MeteredExports;
        receive(inst);
      });
      return {};
    },
    onHeapExhausted() {
      heapExhausted = true;
    },
    // Runs synchronously around jq's main: the fuel is armed right before it starts, so runs
    // queued behind each other never share fuel, and a trap is classified before anything else
    // can touch the globals.
    guardRun(run: () => void) {
      const ex = exportsOf;
      if (!ex) throw new RunAborted("jq did not start");
      ex.jq_fuel.value = own.steps;
      ex.jq_trap.value = 0;
      heapExhausted = false;
      // callMain pushes argv (the program text) on the stack and never pops it; without this
      // every run would leave the stack a little deeper until it overran jq's static data.
      const stackTop = ex.jq_stack_pointer.value as number;
      try {
        run();
        ex.jq_stack_pointer.value = stackTop;
      } catch (err) {
        const trap = ex.jq_trap.value as number;
        if (trap === TRAP_STEPS) throw new BudgetTrap(`jq budget exceeded: more than ${own.steps} steps`);
        if (trap === TRAP_STACK) throw new BudgetTrap("jq budget exceeded: nesting too deep for jq's stack");
        if (heapExhausted) throw new BudgetTrap(`jq budget exceeded: more than ${own.memoryMb} MiB of memory`);
        throw new RunAborted("jq aborted");
      }
    },
  });
  return started;
}

function getInstance(): Promise<JqModule> {
  instance ??= startInstance();
  return instance;
}

/** Programs are compiled by jq on every run; we remember which ones compile so a known-bad
 * program fails without running and a known-good one skips the compile probe. Bound: at most
 * JQ_REMEMBERED_MAX programs and JQ_REMEMBERED_MAX_CHARS characters of program text per isolate,
 * none longer than JQ_REMEMBERED_MAX_PROGRAM_CHARS (a program rendered from a template can carry a
 * turn's data, so each turn may bring a new one). Eviction: the oldest first. */
const compileVerdicts = new Map<string, string | null>();
export const JQ_REMEMBERED_MAX = 512;
export const JQ_REMEMBERED_MAX_CHARS = 1_000_000;
export const JQ_REMEMBERED_MAX_PROGRAM_CHARS = 16 * 1024;
let rememberedChars = 0;

/** Programs and characters remembered (tests, and the bound above). */
export function jqRemembered(): { programs: number; chars: number } {
  return { programs: compileVerdicts.size, chars: rememberedChars };
}

function wrap(program: string): string {
  // Newlines keep a trailing `# comment` in the program from swallowing the wrapper.
  return `try ([ (\n${program}\n) ] | {ok: .}) catch {err: .}`;
}

/** jq compiles the whole program before it runs, and never takes the `if false` branch. */
function compileOnly(program: string): string {
  return `if false then (\n${program}\n) else empty end`;
}

function cleanDiagnostic(stderr: string): string {
  return (
    stderr
      .split("\n")
      .map((l) => l.replace(/^jq: /, "").trim())
      .filter((l) => l && !l.startsWith("Use jq --help") && !/^\d+ compile errors?$/.test(l))
      .join("; ")
      .replace(/at <top-level>, line \d+:?/g, "")
      .replace(/\s+/g, " ")
      .trim() || "invalid jq program"
  );
}

async function runRaw(inputJson: string, wrapped: string): Promise<string> {
  const current = getInstance();
  const jq = await current;
  try {
    return await jq.raw(inputJson, wrapped, ["-c"]);
  } catch (err) {
    if (err instanceof Error && !(err instanceof BudgetTrap) && !(err instanceof RunAborted)) {
      // jq-wasm throws an Error carrying stderr after main returned with nothing on stdout: a
      // compile failure. jq's main returned normally, so the instance is still sound.
      throw new JqError("compile", cleanDiagnostic(err.message));
    }
    // Anything else escaped jq's main mid-run (a trap, an abort) and leaves the instance in an
    // unknown state: the next run starts a fresh one.
    if (instance === current) instance = null;
    if (err instanceof BudgetTrap) throw new JqError("budget", err.message);
    throw new JqError("runtime", "jq aborted");
  }
}

/**
 * Runs `program` over `input` and returns every output value in order.
 * Throws JqError("compile") for a program jq refuses, JqError("runtime") for `error(...)` or
 * any other run-time failure, and JqError("budget") when the run exceeds its budget.
 */
export async function jqRun(program: string, input: unknown): Promise<unknown[]> {
  const known = compileVerdicts.get(program);
  if (typeof known === "string") throw new JqError("compile", known);
  const inputJson = JSON.stringify(input ?? null);
  let out: string;
  try {
    out = await runRaw(inputJson, wrap(program));
  } catch (err) {
    if (err instanceof JqError && err.kind === "compile") remember(program, err.message);
    throw err;
  }
  remember(program, null);
  const line = out.trim().split("\n").pop() ?? "";
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new JqError("runtime", "jq produced unreadable output");
  }
  const reply = typeof parsed === "object" && parsed !== null ? parsed : {};
  if ("ok" in reply && Array.isArray(reply.ok)) return reply.ok;
  const e = "err" in reply ? reply.err : undefined;
  throw new JqError("runtime", typeof e === "string" ? e : e === null || e === undefined ? "null (null)" : JSON.stringify(e));
}

function remember(program: string, verdict: string | null): void {
  if (program.length > JQ_REMEMBERED_MAX_PROGRAM_CHARS || compileVerdicts.has(program)) return;
  compileVerdicts.set(program, verdict);
  rememberedChars += program.length;
  for (const oldest of compileVerdicts.keys()) {
    if (compileVerdicts.size <= JQ_REMEMBERED_MAX && rememberedChars <= JQ_REMEMBERED_MAX_CHARS) break;
    compileVerdicts.delete(oldest);
    rememberedChars -= oldest.length;
  }
}

/**
 * Checks that `program` compiles without evaluating it: jq compiles the program inside a branch
 * it never takes. Still under the budget, in case the text escapes that branch. Throws
 * JqError("compile") or JqError("budget"); a known-good program returns at once.
 */
export async function jqCompile(program: string): Promise<void> {
  const known = compileVerdicts.get(program);
  if (known === null) return;
  if (typeof known === "string") throw new JqError("compile", known);
  try {
    await runRaw("null", compileOnly(program));
  } catch (err) {
    if (err instanceof JqError && err.kind === "compile") remember(program, err.message);
    if (err instanceof JqError && err.kind === "runtime") return; // compiled; escaped the branch
    throw err;
  }
  remember(program, null);
}

/** Runs `program` and requires exactly one output. */
export async function jqOne(program: string, input: unknown): Promise<unknown> {
  const outs = await jqRun(program, input);
  if (outs.length !== 1) {
    throw new JqError("runtime", `expected exactly one output, got ${outs.length}`);
  }
  return outs[0];
}
