/**
 * JSON containment for `POST /api/states/{name}/records/search` (platform-facts B5: "filters
 * (JSON containment)"), with the meaning PostgreSQL's `@>` gives it, since that is what the
 * reference's filters ran on: an object contains another when every key of the other is present
 * and its value contained; an array contains another when every element of the other is contained
 * in some element of it; scalars contain only an equal scalar. Pure.
 */
import type { JsonValue } from "../platform/http/bounded-json";

export function contains(doc: JsonValue, filter: JsonValue): boolean {
  if (filter === null || typeof filter !== "object") return doc === filter;
  if (Array.isArray(filter)) {
    if (!Array.isArray(doc)) return false;
    return filter.every((f) => doc.some((d) => contains(d, f)));
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return false;
  for (const [k, v] of Object.entries(filter)) {
    if (!Object.hasOwn(doc, k) || !contains(doc[k], v)) return false;
  }
  return true;
}
