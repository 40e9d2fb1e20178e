// Build step helper: instrument jq's wasm so that no jq program can run unbounded.
//
// workerd enforces no CPU limit locally, and a timer cannot interrupt synchronous wasm, so the
// bound has to live inside the module itself. Binaryen's `log-execution` pass inserts a call to
// an imported `log_execution` function at every function entry, loop header and return; we swap
// that import for a tiny function of our own that
//   - decrements an exported i32 global `jq_fuel` and traps (`unreachable`) once it goes below 0:
//     every unbounded computation must pass a loop header or a call, so the fuel bounds them all;
//   - traps when the C stack pointer has come within STACK_MARGIN bytes of the end of jq's stack,
//     so deep C recursion (printing or freeing a deeply nested value) traps instead of silently
//     overwriting the static data below the stack.
// It also exports the stack pointer as `jq_stack_pointer` (see below). Before trapping it records why in the exported global `jq_trap` (1 = steps, 2 = stack), so the
// engine can say which budget ran out. A trapped instance is discarded by the engine.
import binaryen from "binaryen";

/** Emscripten's default stack size (since 3.1.27); jq-wasm's build does not change it. */
const STACK_SIZE = 64 * 1024;
/** Head-room kept below the checked limit: the largest frame a leaf function may still push. */
const STACK_MARGIN = 16 * 1024;

export const TRAP_STEPS = 1;
export const TRAP_STACK = 2;

/**
 * Returns the instrumented wasm. Fails loudly if the module does not look like the Emscripten
 * build we expect (so a jq-wasm upgrade cannot silently ship an unmetered module).
 */
export function meterJqWasm(bytes) {
  const m = binaryen.readBinary(bytes);
  m.setFeatures(
    binaryen.Features.MVP | binaryen.Features.MutableGlobals | binaryen.Features.SignExt | binaryen.Features.BulkMemory | binaryen.Features.NontrappingFPToInt,
  );
  if (!m.validate()) throw new Error("jq-metering: the jq wasm does not validate before instrumentation");

  // Emscripten's stack pointer is the module's first global: a mutable i32 set to the top of the
  // stack, which grows down towards the static data.
  const sp = binaryen.getGlobalInfo(m.getGlobalByIndex(0));
  const spInit = sp.init ? binaryen.getExpressionInfo(sp.init) : null;
  if (sp.module || !sp.mutable || sp.type !== binaryen.i32 || !spInit || typeof spInit.value !== "number") {
    throw new Error("jq-metering: the first global is not Emscripten's stack pointer");
  }
  const stackLimit = spInit.value - STACK_SIZE + STACK_MARGIN;
  if (stackLimit <= STACK_MARGIN) throw new Error("jq-metering: unexpected stack layout");

  m.runPasses(["log-execution"]);
  const hook = "log_execution";
  const info = binaryen.getFunctionInfo(m.getFunction(hook));
  if (!info.module) throw new Error("jq-metering: log-execution did not add its import");
  m.removeFunction(hook);

  m.addGlobal("jq_fuel", binaryen.i32, true, m.i32.const(0x7fffffff));
  m.addGlobal("jq_trap", binaryen.i32, true, m.i32.const(0));
  const trapWith = (code) => m.block(null, [m.global.set("jq_trap", m.i32.const(code)), m.unreachable()]);
  m.addFunction(
    hook,
    binaryen.createType([binaryen.i32]),
    binaryen.none,
    [],
    m.block(null, [
      m.global.set("jq_fuel", m.i32.sub(m.global.get("jq_fuel", binaryen.i32), m.i32.const(1))),
      m.if(m.i32.lt_s(m.global.get("jq_fuel", binaryen.i32), m.i32.const(0)), trapWith(TRAP_STEPS)),
      m.if(m.i32.lt_u(m.global.get(sp.name, binaryen.i32), m.i32.const(stackLimit)), trapWith(TRAP_STACK)),
    ]),
  );
  m.addGlobalExport("jq_fuel", "jq_fuel");
  m.addGlobalExport("jq_trap", "jq_trap");
  // jq-wasm calls Emscripten's callMain once per run, and callMain copies argv (the whole program
  // text) onto the stack without ever popping it: the engine saves and restores the stack
  // pointer around each run, or repeated runs would walk the stack down into static data.
  m.addGlobalExport(sp.name, "jq_stack_pointer");
  if (!m.validate()) throw new Error("jq-metering: the instrumented module does not validate");

  // Inline the hook into its call sites: a call per loop iteration would otherwise cost jq's
  // interpreter loop a good part of its speed.
  binaryen.setOptimizeLevel(2);
  binaryen.setShrinkLevel(0);
  binaryen.setAlwaysInlineMaxSize(40);
  m.runPasses(["inlining-optimizing"]);

  const out = m.emitBinary();
  m.dispose();
  return out;
}
