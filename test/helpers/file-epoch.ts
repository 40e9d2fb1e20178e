/**
 * Test files share one isolate and, between files, the setup empties its storage. What a helper
 * caches for "this file's database" (an admin key) is valid only within the file that made it, so
 * helpers keep the epoch they cached under and start over when the setup has moved on.
 */
let current = 0;

export function fileEpoch(): number {
  return current;
}

/** Called by the setup before each file runs. */
export function beginFile(): void {
  current++;
}

/** A value cached for the current file only. */
export function perFile<T>(): { get(): T | undefined; set(value: T): T } {
  let held: { epoch: number; value: T } | undefined;
  return {
    get: () => (held && held.epoch === current ? held.value : undefined),
    set: (value) => {
      held = { epoch: current, value };
      return value;
    },
  };
}
