/**
 * `redact` (transformer): replaces the values at given paths of a successful result with
 * `"<redacted>"`, so a caller (or a model) never sees them. Pure.
 *
 * A path is dot-separated segments: an object key, an array index, or `*` (every key or element
 * at that level), e.g. `user.email`, `items.*.token`, `*.secret`. A path that does not exist in
 * the result changes nothing (nothing is added). Keys containing a dot cannot be named.
 */
import { z } from "zod";
import type { ExtensionDef } from "./model";

export const REDACTED = "<redacted>";

const PathSchema = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[^.\s]+(\.[^.\s]+)*$/, { message: "must be dot-separated, non-empty segments without whitespace" });

export const RedactConfig = z.object({ paths: z.array(PathSchema).min(1).max(64) }).strict();
export type RedactConfig = z.infer<typeof RedactConfig>;

const INDEX = /^(0|[1-9]\d{0,8})$/;

/** The value with `segments` replaced; copies only along the path, never mutates `value`. */
function redactAt(value: unknown, segments: string[], at: number): unknown {
  if (at === segments.length) return REDACTED;
  const head = segments[at];
  if (Array.isArray(value)) {
    if (head === "*") return value.map((v) => redactAt(v, segments, at + 1));
    if (!INDEX.test(head)) return value;
    const i = Number(head);
    if (i >= value.length) return value;
    const copy = value.slice();
    copy[i] = redactAt(value[i], segments, at + 1);
    return copy;
  }
  if (typeof value === "object" && value !== null) {
    const obj = value as Record<string, unknown>;
    if (head === "*") {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(obj))
        Object.defineProperty(out, k, { value: redactAt(v, segments, at + 1), enumerable: true, writable: true, configurable: true });
      return out;
    }
    if (!Object.hasOwn(obj, head)) return value;
    const out = { ...obj };
    // defineProperty, so a key such as `__proto__` is an own data property and never a prototype write.
    Object.defineProperty(out, head, { value: redactAt(obj[head], segments, at + 1), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value; // a scalar with segments left: nothing there to redact
}

/** `value` with every path in `paths` redacted, in order. Pure. */
export function redactPaths(value: unknown, paths: readonly string[]): unknown {
  let out = value;
  for (const p of paths) out = redactAt(out, p.split("."), 0);
  return out;
}

export const redact: ExtensionDef<RedactConfig> = {
  name: "redact",
  kind: "transformer",
  description:
    'Replaces the values at `paths` of a successful result with "<redacted>". A path is dot-separated keys, array indexes or `*` (every key or element), e.g. `user.email`, `items.*.token`.',
  config: RedactConfig,
  async apply(config, _call, next) {
    const r = await next();
    return r.ok ? { ok: true, value: redactPaths(r.value, config.paths) } : r;
  },
};
