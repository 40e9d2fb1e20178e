/**
 * The jq budget's shape, defaults and bounds. Kept apart from the engine so the settings parser
 * (also run by `npm run check-config` under Node) does not load jq's wasm.
 */

/** What one jq run may use. */
export interface JqBudget {
  /** Metered steps: function entries, loop iterations and returns inside jq's wasm. */
  steps: number;
  /** Largest heap jq's wasm may grow to, in MiB. */
  memoryMb: number;
}

/**
 * 60 million steps is about a third of a second of jq on a 2-core reference machine under load
 * (docs/security.md), far above what a mapping or a key condition needs (a few hundred thousand,
 * most of it jq compiling its builtins); 64 MiB of heap leaves a Worker isolate room to spare.
 */
export const DEFAULT_JQ_BUDGET: Readonly<JqBudget> = Object.freeze({ steps: 60_000_000, memoryMb: 64 });
/** Below this jq cannot reliably compile its own builtins. */
export const JQ_MIN_STEPS = 2_000_000;
/** The fuel counter is a signed 32-bit global inside the wasm. */
export const JQ_MAX_STEPS = 2_000_000_000;
/** jq's wasm starts with a 16 MiB heap. */
export const JQ_MIN_MEMORY_MB = 16;
/** A Worker isolate has 128 MiB in all. */
export const JQ_MAX_MEMORY_MB = 96;
