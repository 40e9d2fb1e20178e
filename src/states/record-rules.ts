/**
 * The rules a record write must pass besides its ops' own (pure): the effective schema, and the
 * write regimes for whole-document writes (PUT replaces every top-level field, PATCH the ones it
 * names). A composing path is written through keyed ops only (platform-facts B5), so a whole
 * write that changes what lies at or above a composing path is refused.
 */
import type { JsonObject, JsonValue } from "../platform/http/bounded-json";
import { checkAgainstSchema } from "../platform/json-schema";
import { canonicalJson } from "./declaration";
import type { Regime } from "./ops";

/** null when `data` satisfies `schema`, else a message naming where (never the values). */
export function checkRecordWrite(schema: JsonObject, data: JsonObject): string | null {
  const r = checkAgainstSchema(schema, data);
  return r.ok ? null : `the record does not match the state's effective schema: ${r.problems.join("; ")}`;
}

function at(doc: JsonValue | undefined, path: string[]): JsonValue | undefined {
  let cur: JsonValue | undefined = doc;
  for (const seg of path) {
    if (cur === null || typeof cur !== "object" || Array.isArray(cur) || !Object.hasOwn(cur, seg)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

/** null when the whole write from `before` to `after` leaves every composing path as it was, else why not. */
export function checkWholeWriteRegimes(before: JsonObject, after: JsonObject, regimes: Regime[]): string | null {
  for (const r of regimes) {
    if (r.regime !== "composing") continue;
    const was = at(before, r.path);
    const now = at(after, r.path);
    if ((was === undefined) !== (now === undefined) || (was !== undefined && canonicalJson(was) !== canonicalJson(now))) {
      return "a composing path is written through keyed ops (POST …/deltas), not by replacing or merging the record";
    }
  }
  return null;
}
