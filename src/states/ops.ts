/**
 * Delta ops: a batch of small, targeted edits to a state record's JSON document (platform-facts
 * B5, `POST …/deltas` and turn-time updates). Pure: no I/O, no clock, no randomness; the same
 * document, ops and regimes always give the same answer.
 *
 * Paths. A path is an array of segments, walked from the document root:
 *   - a string is an object key;
 *   - a non-negative integer is an array index;
 *   - the string "-" means "append to this array". It may only end the path of a `set`; any other
 *     place (mid-path, `remove`, keyed ops) is refused, so "-" never silently means a key named "-".
 * A segment of the wrong kind for its container (a key into an array, an index into an object) is
 * refused rather than coerced: "0" and 0 are different addresses. At most MAX_PATH_SEGMENTS
 * segments. The empty path is the root, which stays a JSON object: only a `set` of an object may
 * replace it, and it can never be removed.
 *
 * Ops:
 *   {op:"set", path, value}
 *       Writes `value` at `path`. Missing intermediate objects are created for key segments; an
 *       array is never created (its place cannot be inferred), so an index or "-" into a missing
 *       container is refused. An index may address an existing element or exactly `length` (an
 *       append). Writing through a scalar (e.g. into a string) is refused.
 *   {op:"remove", path}
 *       Deletes the key or array element at `path` (later elements shift down). When anything
 *       along the path is absent it does nothing and is reported in `skipped`.
 *   Keyed ops act on an ARRAY OF OBJECTS at `path`, matching elements by the value of their `key`
 *   field. A match value is a string or an integer ("1" and 1 differ); an element that is not an
 *   object, or whose key field is missing or of another type, is never matched. Every matching
 *   element is acted on, duplicates included. Each payload holds at most MAX_KEYED_ITEMS entries.
 *   {op:"set_by_key", path, key, items}
 *       Each item (an object carrying a string/integer `item[key]`) replaces the matching
 *       elements, or is appended when none matches. A missing array is created (as `set` creates
 *       intermediate objects).
 *   {op:"merge_by_key", path, key, items}
 *       As set_by_key, but the item is shallow-merged into each match: the item's top-level fields
 *       overwrite, the element's other fields stay.
 *   {op:"remove_by_key", path, key, keys}
 *       Removes every element whose key value is in `keys`. A missing array is a no-op.
 *   {op:"unset_by_key", path, key, keys, fields}
 *       Deletes `fields` (1..MAX_KEYED_ITEMS, never the key field) from each matching element.
 *   {op:"set_by_key_each", path, key, keys, field, value}
 *       Sets `element[field] = value` on each matching element (`field` is never the key field).
 *   Keys that match nothing are passed over. An op that changed nothing (absent remove, keyed op
 *   with no match, unset of fields no match had) is listed in `skipped`.
 *
 * A batch holds at most MAX_OPS ops and is atomic: the first refused op refuses the whole batch
 * and the document is left as it was. Unknown ops and extra fields are refused by the schemas.
 *
 * Write regimes. A `composing` path is built up by many writers through keyed ops, so a `set` or
 * `remove` that would replace it wholesale (its path equal to, or a prefix of, the composing
 * path) is refused with kind "regime". Edits strictly inside it, and keyed ops, are allowed.
 * `single` imposes nothing.
 *
 * Error messages name the op's index and the offending field (`path[2]`, `items[0]`), never a
 * value or key taken from the document or the op: a record may hold personal data, and refusals
 * end up in HTTP answers and logs.
 */
import { z } from "zod";
import { intactIdentifier } from "../platform/http/identifiers";
import { JsonObject, JsonValue, type JsonArray } from "../platform/http/bounded-json";
import { must } from "../platform/must";

export const MAX_PATH_SEGMENTS = 128;
export const MAX_OPS = 1000;
export const MAX_KEYED_ITEMS = 200;

/** The segment that appends to an array. */
const APPEND = "-";

// ---------------------------------------------------------------------------------------------
// Shared rules: used by the schemas below and re-checked by applyOps, which may be handed ops that
// never went through a schema (RPC callers, tests) and must refuse them rather than corrupt a
// document (e.g. write "-" as a key, or an element no key can ever match).

/** A value that can identify an element of a keyed array. Safe integers only: beyond 2^53 two
 * distinct JSON integers can parse to the same number and match each other. */
function isKeyValue(v: unknown): v is string | number {
  return typeof v === "string" || Number.isSafeInteger(v);
}

function isIndex(seg: unknown): seg is number {
  return Number.isSafeInteger(seg) && (seg as number) >= 0;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Why `path` is malformed, or null. `appendLast`: the op is a `set`, where "-" may end the path.
 * Returns the index of the bad segment with the reason, so the schema can point at it.
 */
function pathProblem(path: readonly unknown[], appendLast: boolean): { at: number; message: string } | null {
  for (let j = 0; j < path.length; j++) {
    const seg = path[j];
    if (seg === APPEND) {
      if (appendLast && j === path.length - 1) continue;
      return { at: j, message: appendLast ? `"-" (append) may only be the last segment` : `"-" (append) is allowed only as the last segment of a set` };
    }
    if (typeof seg !== "string" && !isIndex(seg)) return { at: j, message: "must be a string key or a non-negative integer index" };
  }
  return null;
}

/** Why an item of set_by_key / merge_by_key cannot be keyed, or null. */
function itemProblem(item: unknown, key: string): string | null {
  if (!isObject(item)) return "must be an object";
  if (!Object.hasOwn(item, key) || !isKeyValue(item[key])) return "must hold a string or integer in the field named by `key`";
  return null;
}

// ---------------------------------------------------------------------------------------------
// Schemas: one per shape.

export const PathSegment = z.union([z.string(), z.number().int().nonnegative()]);
export type PathSegment = z.infer<typeof PathSegment>;

export const DeltaPath = z.array(PathSegment).max(MAX_PATH_SEGMENTS);
export type DeltaPath = z.infer<typeof DeltaPath>;

/** A path where "-" may (setPath) or may not (fixedPath) end the path. */
const appendRule = (appendLast: boolean) => (path: unknown[], ctx: z.RefinementCtx) => {
  const p = pathProblem(path, appendLast);
  // A segment of the wrong type is already reported by PathSegment; only "-" is this rule's.
  if (p && path[p.at] === APPEND) ctx.addIssue({ code: "custom", message: p.message, path: [p.at] });
};
const setPath = DeltaPath.superRefine(appendRule(true));
// The root is an object, so neither removing it nor treating it as a keyed array can succeed.
const fixedPath = (rootMeaning: string) => DeltaPath.min(1, { message: `must not be empty: ${rootMeaning}` }).superRefine(appendRule(false));
const removePath = fixedPath("the root cannot be removed");
const keyedPath = fixedPath("the root is an object, not an array");

export const KeyValue = z.union([z.string(), z.number().int()]);
export type KeyValue = z.infer<typeof KeyValue>;

const keyField = z.string().min(1, { message: "must not be empty" });
const keyedItems = z.array(JsonObject).max(MAX_KEYED_ITEMS);
const keyedKeys = z.array(KeyValue).max(MAX_KEYED_ITEMS);

/**
 * Ops take only their own fields. zod's default message for an extra field quotes its name, which
 * is caller input; this one does not (the issue still lists the names for code that needs them).
 */
const strict = <S extends z.core.$ZodLooseShape>(shape: S) =>
  z.strictObject(shape, { error: (issue) => (issue.code === "unrecognized_keys" ? "has a field it does not take" : undefined) });

/** `value` must be present: a missing one would write `undefined`, which JSON cannot hold. */
const requiredValue = JsonValue.refine((v) => v !== undefined, { message: "is required" });

const itemsCarryKey = (op: { key: string; items: unknown[] }, ctx: z.RefinementCtx) => {
  op.items.forEach((item, n) => {
    const problem = itemProblem(item, op.key);
    if (problem) ctx.addIssue({ code: "custom", message: problem, path: ["items", n] });
  });
};

export const SetOp = strict({ op: z.literal("set"), path: setPath, value: requiredValue }).superRefine((op, ctx) => {
  if (op.path.length === 0 && !isObject(op.value)) {
    ctx.addIssue({ code: "custom", message: "must be an object when the path is empty (it replaces the whole record)", path: ["value"] });
  }
});
export type SetOp = z.infer<typeof SetOp>;

export const RemoveOp = strict({ op: z.literal("remove"), path: removePath });
export type RemoveOp = z.infer<typeof RemoveOp>;

export const SetByKeyOp = strict({ op: z.literal("set_by_key"), path: keyedPath, key: keyField, items: keyedItems }).superRefine(itemsCarryKey);
export type SetByKeyOp = z.infer<typeof SetByKeyOp>;

export const MergeByKeyOp = strict({ op: z.literal("merge_by_key"), path: keyedPath, key: keyField, items: keyedItems }).superRefine(itemsCarryKey);
export type MergeByKeyOp = z.infer<typeof MergeByKeyOp>;

export const RemoveByKeyOp = strict({ op: z.literal("remove_by_key"), path: keyedPath, key: keyField, keys: keyedKeys });
export type RemoveByKeyOp = z.infer<typeof RemoveByKeyOp>;

export const UnsetByKeyOp = strict({
  op: z.literal("unset_by_key"),
  path: keyedPath,
  key: keyField,
  keys: keyedKeys,
  fields: z.array(z.string()).min(1, { message: "must list at least one field" }).max(MAX_KEYED_ITEMS),
}).superRefine((op, ctx) => {
  op.fields.forEach((f, n) => {
    if (f === op.key) ctx.addIssue({ code: "custom", message: "must not be the key field", path: ["fields", n] });
  });
});
export type UnsetByKeyOp = z.infer<typeof UnsetByKeyOp>;

export const SetByKeyEachOp = strict({
  op: z.literal("set_by_key_each"),
  path: keyedPath,
  key: keyField,
  keys: keyedKeys,
  field: z.string(),
  value: requiredValue,
}).superRefine((op, ctx) => {
  if (op.field === op.key) ctx.addIssue({ code: "custom", message: "must not be the key field", path: ["field"] });
});
export type SetByKeyEachOp = z.infer<typeof SetByKeyEachOp>;

export const DeltaOp = z.discriminatedUnion("op", [SetOp, RemoveOp, SetByKeyOp, MergeByKeyOp, RemoveByKeyOp, UnsetByKeyOp, SetByKeyEachOp]);
export type DeltaOp = z.infer<typeof DeltaOp>;

export const DeltaBatch = z
  .object({
    ops: z.array(DeltaOp).max(MAX_OPS),
    // An op id becomes a storage key: intact text only (no control characters, no lone surrogates).
    op_id: intactIdentifier(z.string().trim().min(1).max(256)).optional(),
  })
  .strict();
export type DeltaBatch = z.infer<typeof DeltaBatch>;

/** A write-regime rule on an absolute path of object keys. */
export const Regime = z.object({ path: z.array(z.string()), regime: z.enum(["single", "composing"]) }).strict();
export type Regime = z.infer<typeof Regime>;

export type ApplyResult =
  | { ok: true; doc: JsonObject; skipped: number[]; paths: Array<Array<string | number>> }
  | { ok: false; kind: "structure" | "regime"; error: string };

// ---------------------------------------------------------------------------------------------
// Applying.

/** Thrown inside one op, caught by applyOps, which prefixes the op's index. Never leaves the module. */
class Refusal extends Error {
  constructor(
    readonly kind: "structure" | "regime",
    message: string,
  ) {
    super(message);
  }
}
const refuse = (message: string): never => {
  throw new Refusal("structure", message);
};

type Container = JsonObject | JsonArray;
type Segment = string | number;

function isContainer(v: unknown): v is Container {
  return typeof v === "object" && v !== null;
}

/**
 * Op values are copied on every write: the result must not share objects with the caller's ops
 * (a later op in the batch would edit the caller's value through it), nor one written value
 * appear at two places of the document (an edit to one would show at the other).
 */
function copy<T extends JsonValue>(v: T): T {
  return structuredClone(v);
}

/**
 * Writes an own property. Plain assignment of "__proto__" would set the object's prototype
 * instead of adding a key (and JSON.parse does yield such keys), so define it outright.
 */
function define(obj: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/** The child at `seg`, or undefined when absent. A segment of the wrong kind is refused. */
function childAt(container: Container, seg: Segment, j: number): JsonValue | undefined {
  if (Array.isArray(container)) {
    if (!isIndex(seg)) return refuse(`path[${j}] must be an index: it addresses an array`);
    return seg < container.length ? container[seg] : undefined;
  }
  if (typeof seg !== "string") return refuse(`path[${j}] must be a key: it addresses an object`);
  // Own keys only: "constructor" or "__proto__" must not reach Object.prototype.
  return Object.hasOwn(container, seg) ? container[seg] : undefined;
}

/** The value at `path`, or undefined when any step is absent. Never creates anything. */
function lookup(root: JsonObject, path: readonly Segment[]): JsonValue | undefined {
  let cur: JsonValue = root;
  for (let j = 0; j < path.length; j++) {
    if (!isContainer(cur)) return refuse(`path[${j - 1}] holds neither an object nor an array`);
    const next = childAt(cur, path[j], j);
    if (next === undefined) return undefined;
    cur = next;
  }
  return cur;
}

/**
 * The container reached by the first `upto` segments of `path`, creating missing objects on the
 * way. Only objects are created: whether a missing place should hold an array cannot be told from
 * the path, and an index into a fresh array could only ever be 0.
 */
function descend(root: JsonObject, path: readonly Segment[], upto: number): Container {
  let cur: Container = root;
  for (let j = 0; j < upto; j++) {
    let next = childAt(cur, path[j], j);
    if (next === undefined) {
      if (Array.isArray(cur)) return refuse(`path[${j}] is past the end of its array`);
      const following = path[j + 1];
      if (following === APPEND || typeof following === "number") return refuse(`path[${j + 1}] addresses an array that does not exist`);
      next = {};
      define(cur, path[j] as string, next);
    }
    if (!isContainer(next)) return refuse(`path[${j}] holds neither an object nor an array, so nothing can be written inside it`);
    cur = next;
  }
  return cur;
}

/** Writes `value` as `parent[seg]` (the last segment of a set). */
function writeAt(parent: Container, seg: Segment, value: JsonValue, j: number): void {
  if (Array.isArray(parent)) {
    if (seg === APPEND) {
      parent.push(value);
      return;
    }
    if (!isIndex(seg)) return refuse(`path[${j}] must be an index or "-": it addresses an array`);
    // `length` itself appends; anything further would leave a hole, which JSON writes as null.
    if (seg > parent.length) return refuse(`path[${j}] is past the end of its array`);
    parent[seg] = value;
    return;
  }
  if (seg === APPEND) return refuse(`path[${j}] appends ("-"), but addresses an object`);
  if (typeof seg !== "string") return refuse(`path[${j}] must be a key: it addresses an object`);
  define(parent, seg, value);
}

/** The working document; `root` is swapped when a set replaces the whole record. */
interface Work {
  root: JsonObject;
}

function applySet(work: Work, op: SetOp): boolean {
  if (op.value === undefined) return refuse("value is required");
  if (op.path.length === 0) {
    if (!isObject(op.value)) return refuse("value must be an object when the path is empty (it replaces the whole record)");
    work.root = copy(op.value);
    return true;
  }
  const last = op.path.length - 1;
  const parent = descend(work.root, op.path, last);
  writeAt(parent, op.path[last], copy(op.value), last);
  return true;
}

function applyRemove(work: Work, op: RemoveOp): boolean {
  if (op.path.length === 0) return refuse("path must not be empty: the root cannot be removed");
  const last = op.path.length - 1;
  const parent = lookup(work.root, op.path.slice(0, last));
  if (parent === undefined) return false;
  if (!isContainer(parent)) return refuse(`path[${last - 1}] holds neither an object nor an array`);
  const seg = op.path[last];
  if (childAt(parent, seg, last) === undefined) return false;
  if (Array.isArray(parent)) parent.splice(seg as number, 1);
  else delete parent[seg as string];
  return true;
}

/**
 * The array a keyed op works on, and whether it was created just now; null when it is absent and
 * `create` is off (removing from a missing array changes nothing).
 */
function keyedArray(work: Work, path: readonly Segment[], create: boolean): { arr: JsonArray; created: boolean } | null {
  if (path.length === 0) return refuse("path must not be empty: the root is an object, not an array");
  const last = path.length - 1;
  let found: JsonValue | undefined;
  if (create) {
    const parent = descend(work.root, path, last);
    found = childAt(parent, path[last], last);
    if (found === undefined) {
      if (Array.isArray(parent)) return refuse(`path[${last}] is past the end of its array`);
      const arr: JsonArray = [];
      define(parent, path[last] as string, arr);
      return { arr, created: true };
    }
  } else {
    found = lookup(work.root, path);
    if (found === undefined) return null;
  }
  if (!Array.isArray(found)) return refuse("path must address an array");
  return { arr: found, created: false };
}

/** The element's match value, or undefined when it cannot be matched. */
function keyOf(el: JsonValue, key: string): string | number | undefined {
  if (!isObject(el) || !Object.hasOwn(el, key)) return undefined;
  const v = el[key];
  return isKeyValue(v) ? v : undefined;
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key === "") refuse("key must be a non-empty string");
}

/** Replaces (or merges into) each element matching each item, appending items that match none. */
function applyUpsert(work: Work, op: SetByKeyOp | MergeByKeyOp): boolean {
  checkKey(op.key);
  // Items are checked before the array is touched or created, so a bad item changes nothing.
  op.items.forEach((item, n) => {
    const problem = itemProblem(item, op.key);
    if (problem) refuse(`items[${n}] ${problem}`);
  });
  const { arr, created } = must(keyedArray(work, op.path, true), "the array an upsert creates");
  for (const item of op.items) {
    const k = item[op.key];
    let matched = false;
    for (let e = 0; e < arr.length; e++) {
      if (keyOf(arr[e], op.key) !== k) continue;
      // Spread defines own properties, so a "__proto__" field stays a field here too.
      arr[e] = op.op === "merge_by_key" ? { ...(arr[e] as JsonObject), ...copy(item) } : copy(item);
      matched = true;
    }
    if (!matched) arr.push(copy(item));
  }
  // An empty payload still creates the array it names, which is a change.
  return op.items.length > 0 || created;
}

/** The elements of the array at `path` whose key value is one of `keys`; none when it is absent. */
function matches(work: Work, op: { path: Segment[]; key: string; keys: KeyValue[] }): { arr: JsonArray; hit: (el: JsonValue) => boolean } | null {
  checkKey(op.key);
  const found = keyedArray(work, op.path, false);
  if (!found) return null;
  // A Set compares like ===, so "1" and 1 stay distinct.
  const wanted = new Set<string | number>(op.keys);
  return {
    arr: found.arr,
    hit: (el) => {
      const k = keyOf(el, op.key);
      return k !== undefined && wanted.has(k);
    },
  };
}

function applyRemoveByKey(work: Work, op: RemoveByKeyOp): boolean {
  const m = matches(work, op);
  if (!m) return false;
  // Compacts in place (one pass) rather than splicing per match.
  let kept = 0;
  for (const el of m.arr) if (!m.hit(el)) m.arr[kept++] = el;
  const removed = m.arr.length - kept;
  m.arr.length = kept;
  return removed > 0;
}

function applyUnsetByKey(work: Work, op: UnsetByKeyOp): boolean {
  if (op.fields.includes(op.key)) return refuse("fields must not include the key field");
  const m = matches(work, op);
  if (!m) return false;
  let changed = false;
  for (const el of m.arr) {
    if (!m.hit(el)) continue;
    const obj = el as JsonObject;
    for (const f of op.fields) {
      if (!Object.hasOwn(obj, f)) continue;
      delete obj[f];
      changed = true;
    }
  }
  return changed;
}

function applySetByKeyEach(work: Work, op: SetByKeyEachOp): boolean {
  if (op.value === undefined) return refuse("value is required");
  if (typeof op.field !== "string") return refuse("field must be a string");
  if (op.field === op.key) return refuse("field must not be the key field");
  const m = matches(work, op);
  if (!m) return false;
  let changed = false;
  for (const el of m.arr) {
    if (!m.hit(el)) continue;
    define(el as JsonObject, op.field, copy(op.value));
    changed = true;
  }
  return changed;
}

/** True when `a` equals `b` or is a prefix of it. */
function isPrefixOf(a: readonly Segment[], b: readonly string[]): boolean {
  return a.length <= b.length && a.every((seg, i) => seg === b[i]);
}

/**
 * A whole-path write at or above a composing path would replace what its many writers built up;
 * such a path changes only through keyed ops (or edits strictly inside it).
 */
function checkRegimes(op: DeltaOp, regimes: readonly Regime[]): void {
  if (op.op !== "set" && op.op !== "remove") return;
  if (regimes.some((r) => r.regime === "composing" && isPrefixOf(op.path, r.path))) {
    throw new Refusal("regime", "path is at or above a composing path, which changes only through keyed ops or edits inside it");
  }
}

/** Applies one op to `work`; true when it changed something. */
function applyOne(work: Work, op: DeltaOp): boolean {
  // Static path rules are re-checked here so an op that skipped the schema cannot write "-" as a key.
  if (!Array.isArray(op.path)) return refuse("path must be an array");
  if (op.path.length > MAX_PATH_SEGMENTS) return refuse(`path must have at most ${MAX_PATH_SEGMENTS} segments`);
  const bad = pathProblem(op.path, op.op === "set");
  if (bad) return refuse(`path[${bad.at}] ${bad.message}`);
  switch (op.op) {
    case "set":
      return applySet(work, op);
    case "remove":
      return applyRemove(work, op);
    case "set_by_key":
    case "merge_by_key":
      return applyUpsert(work, op);
    case "remove_by_key":
      return applyRemoveByKey(work, op);
    case "unset_by_key":
      return applyUnsetByKey(work, op);
    case "set_by_key_each":
      return applySetByKeyEach(work, op);
    default:
      return refuse("op is not a known op");
  }
}

const OP_NAMES: ReadonlySet<string> = new Set(["set", "remove", "set_by_key", "merge_by_key", "remove_by_key", "unset_by_key", "set_by_key_each"]);

/**
 * Applies `ops` in order to a copy of `doc`. All or nothing: the first refused op refuses the
 * batch. `doc` and `ops` are never mutated, and the answered document shares no objects with them.
 * `skipped` holds the indexes of ops that changed nothing; `paths` the path of every other op, in
 * order, as given (an append keeps its "-"), for the audit trail.
 */
export function applyOps(doc: JsonObject, ops: DeltaOp[], regimes: Regime[] = []): ApplyResult {
  const work: Work = { root: structuredClone(doc) };
  const skipped: number[] = [];
  const paths: Array<Array<string | number>> = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    try {
      checkRegimes(op, regimes);
      if (applyOne(work, op)) paths.push([...op.path]);
      else skipped.push(i);
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      // The op name is echoed only when it is one of ours: anything else is caller input.
      const name = isObject(op) && typeof op.op === "string" && OP_NAMES.has(op.op) ? ` (${op.op})` : "";
      return { ok: false, kind: e.kind, error: `op ${i}${name}: ${e.message}` };
    }
  }
  if (!isObject(work.root)) return { ok: false, kind: "structure", error: "the result must be a JSON object at the root" };
  return { ok: true, doc: work.root, skipped, paths };
}
