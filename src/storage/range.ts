/**
 * Byte ranges of a download (RFC 9110 §14), pure. One range is honoured: `bytes=a-b`, `bytes=a-`
 * (to the end) and `bytes=-n` (the last n bytes). A range starting past the end, or a suffix of
 * zero bytes, is unsatisfiable (416 with `Content-Range: bytes *\/size`). A header that is not one
 * well-formed byte range (several ranges, another unit, `a > b`, garbage) is ignored and the whole
 * object is answered, as the RFC allows a server to do.
 */
export type RangeDecision = { kind: "whole" } | { kind: "partial"; offset: number; length: number } | { kind: "unsatisfiable" };

const SINGLE = /^bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i;

export function decideRange(header: string | null | undefined, size: number): RangeDecision {
  if (!header) return { kind: "whole" };
  const m = SINGLE.exec(header.trim());
  if (!m) return { kind: "whole" };
  const [, first, last] = m;
  if (first === "" && last === "") return { kind: "whole" };
  if (first === "") {
    const n = Number(last);
    if (!Number.isFinite(n) || n === 0 || size === 0) return { kind: "unsatisfiable" };
    const length = Math.min(n, size);
    return { kind: "partial", offset: size - length, length };
  }
  const start = Number(first);
  const end = last === "" ? Number.POSITIVE_INFINITY : Number(last);
  if (!Number.isFinite(start) || end < start) return { kind: "whole" };
  if (start >= size) return { kind: "unsatisfiable" };
  const stop = Math.min(end, size - 1);
  return { kind: "partial", offset: start, length: stop - start + 1 };
}

/** `Content-Range` of a partial answer. */
export function contentRange(offset: number, length: number, size: number): string {
  return `bytes ${offset}-${offset + length - 1}/${size}`;
}
