/**
 * A value the code around it has already made sure of (a row it has just written, a key it has
 * just found in the same map, an entry its own guard put there), narrowed from `T | null |
 * undefined` to `T`. Were it missing after all, that is a defect here rather than bad input, so it
 * fails at once with an error naming what was missing instead of as a TypeError further on, or a
 * quiet `undefined` stored or sent.
 */
export function must<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`internal: ${what} is missing`);
  return value;
}
