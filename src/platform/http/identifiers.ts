/**
 * Identifiers arrive intact, or not at all. An identifier (external_user_id, an address, an event
 * id, a thread id, a name) becomes part of a thread id, a D1 key or a Durable Object name. A NUL
 * or a lone UTF-16 surrogate does not survive that trip unchanged (storage writes UTF-8, where a
 * lone surrogate becomes U+FFFD), so the id a door answered would differ from the stored one and
 * two distinct ids could collapse into one. Other control characters (C0, DEL, C1) have no place
 * in an identifier either and only serve to make look-alike ids.
 */
import { z } from "zod";

const CONTROL_CHAR = /[\u0000-\u001F\u007F-\u009F]/;
// Code-unit regex (no `u` flag): a high surrogate not followed by a low one, or a low one not
// preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

export function isIntactIdentifier(s: string): boolean {
  return !CONTROL_CHAR.test(s) && !hasLoneSurrogate(s);
}

export const IDENTIFIER_RULE = "must not contain control characters (C0, DEL, C1) or lone UTF-16 surrogates";

/**
 * Adds the identifier rule to a string schema. Chain it after `.trim()`, so surrounding
 * whitespace is still trimmed away as before and only what remains is judged.
 */
export function intactIdentifier<T extends z.ZodString>(schema: T): T {
  return schema.refine(isIntactIdentifier, { message: IDENTIFIER_RULE }) as T;
}

/** A trimmed, non-blank text of at most `max` characters (option texts, footers, search terms). */
export function nonBlankText(max: number) {
  return z.string().trim().min(1, { message: "must not be blank" }).max(max);
}

/** A trimmed, non-blank identifier of at most `max` characters. */
export function identifierSchema(max: number) {
  return intactIdentifier(z.string().trim().min(1, { message: "must not be blank" }).max(max));
}

/**
 * Where a parsed JSON value holds a lone surrogate (in a string or a key): the dotted path, with
 * ` (a key)` when it is a key ("" for the value itself), or null. Iterative, so a deeply nested body cannot overflow it.
 */
export function findLoneSurrogate(value: unknown): string | null {
  type Node = { value: unknown; key: string | number | null; parent: Node | null };
  const pathOf = (n: Node | null): string => {
    const parts: Array<string | number> = [];
    for (let at = n; at && at.key !== null; at = at.parent) parts.push(at.key);
    return parts.reverse().join(".");
  };
  const stack: Node[] = [{ value, key: null, parent: null }];
  for (let node = stack.pop(); node; node = stack.pop()) {
    const v = node.value;
    if (typeof v === "string") {
      if (hasLoneSurrogate(v)) return pathOf(node);
    } else if (Array.isArray(v)) {
      v.forEach((child, i) => stack.push({ value: child, key: i, parent: node }));
    } else if (typeof v === "object" && v !== null) {
      for (const [k, child] of Object.entries(v)) {
        if (hasLoneSurrogate(k)) return pathOf(node) ? `${pathOf(node)} (a key)` : "a key";
        stack.push({ value: child, key: k, parent: node });
      }
    }
  }
  return null;
}
