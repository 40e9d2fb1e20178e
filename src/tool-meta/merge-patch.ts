/**
 * JSON Merge Patch (RFC 7396), pure: how `PATCH /api/tool-meta/tools/{tool_name}` edits a tool's
 * row. A patch that is not an object replaces the target whole; an object patch merges member by
 * member: `null` deletes the member, an object merges recursively, anything else (arrays included)
 * replaces it. The target is never mutated.
 */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const isObject = (v: unknown): v is { [k: string]: Json } => typeof v === "object" && v !== null && !Array.isArray(v);

export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: { [k: string]: Json } = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}
