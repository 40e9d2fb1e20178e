/**
 * The effective schema of a state: its base schema with every attached template's fragment
 * placed at the attachment's path, and the templates' write regimes made absolute. Pure: inputs
 * are copied, never changed, so a stored declaration can be composed again and again.
 *
 * Errors name the rule, never a property, template or parameter name.
 */
import type { Regime } from "./ops";

/** What composing needs of an attachment: its fragment already has its parameters substituted. */
export type Attachment = {
  template: string;
  path: string[];
  fragment: Record<string, unknown>;
  /** Regime rules with paths relative to `path`. */
  regimes: Regime[];
};

export type Composed = { ok: true; schema: Record<string, unknown>; regimes: Regime[] } | { ok: false; error: string };

type Fail = { ok: false; error: string };
const fail = (error: string): Fail => ({ ok: false, error });

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A deep copy of a JSON value (own `__proto__` keys stay keys: JSON.parse defines, not sets). */
function copyJson(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v));
}

/** A deep copy of a JSON object (a copy is one too; the check only lets the compiler see it). */
function copyObject(v: Record<string, unknown>): Record<string, unknown> {
  const copy = copyJson(v);
  if (!isPlainObject(copy)) throw new Error("a JSON object did not copy to an object");
  return copy;
}

/**
 * Sets an own property. Plain assignment of a key named `__proto__` would replace the object's
 * prototype instead, and JSON property names are anyone's choice.
 */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Whether two paths are equal or one is a prefix of the other (so one would write the other). */
export function pathsOverlap(a: string[], b: string[]): boolean {
  const shared = Math.min(a.length, b.length);
  for (let i = 0; i < shared; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The `properties` map of an object schema node, created when absent. */
function propertiesOf(node: Record<string, unknown>): Record<string, unknown> | null {
  if (!Object.hasOwn(node, "properties")) setOwn(node, "properties", {});
  const props = node.properties;
  return isPlainObject(props) ? props : null;
}

/** A node a path may pass through: an object schema (or one that does not say its type). */
function canHoldProperties(node: unknown): node is Record<string, unknown> {
  return isPlainObject(node) && (node.type === undefined || node.type === "object");
}

/** Places `fragment` at `path` (non-empty) under nested `properties` of `root`, in place. */
function place(root: Record<string, unknown>, path: string[], fragment: Record<string, unknown>): Fail | null {
  let node = root;
  for (const [i, segment] of path.entries()) {
    const props = propertiesOf(node);
    if (!props) return fail("an attachment path crosses a schema whose properties is not an object");
    const last = i === path.length - 1;
    if (last) {
      if (Object.hasOwn(props, segment)) return fail("overlapping path: an attachment lands on a property that already exists");
      setOwn(props, segment, fragment);
      return null;
    }
    if (!Object.hasOwn(props, segment)) setOwn(props, segment, { type: "object", properties: {} });
    const next = props[segment];
    if (!canHoldProperties(next)) return fail("an attachment path crosses a property that is not an object schema");
    node = next;
  }
  return null;
}

/**
 * An attachment at the root path adds its fragment's properties to the root's. Only
 * `properties` is carried: the base's other root keywords (`required`, `additionalProperties`)
 * are the declaration's, and a template changing them would change what records already
 * stored must satisfy.
 */
function mergeAtRoot(root: Record<string, unknown>, fragment: Record<string, unknown>): Fail | null {
  const props = propertiesOf(root);
  if (!props) return fail("the base schema's properties is not an object");
  const added = fragment.properties;
  if (!isPlainObject(added)) return fail("a fragment attached at the root must declare properties");
  for (const [name, sub] of Object.entries(added)) {
    if (Object.hasOwn(props, name)) return fail("overlapping path: an attachment lands on a property that already exists");
    setOwn(props, name, sub);
  }
  return null;
}

/**
 * The base schema composed with `attachments`, in order, and their regimes made absolute
 * (attachment path + regime path). Two attachments overlap when one path is equal to or a prefix
 * of the other; the root path `[]` is a prefix of every path, so a root attachment must be the
 * only one (its writes may reach anywhere).
 */
export function composeEffectiveSchema(base: Record<string, unknown>, attachments: Attachment[]): Composed {
  for (let i = 0; i < attachments.length; i++) {
    for (let j = i + 1; j < attachments.length; j++) {
      if (pathsOverlap(attachments[i].path, attachments[j].path)) return fail("overlapping path: two attachments' paths are equal or one contains the other");
    }
  }
  const schema = copyObject(base);
  const regimes: Regime[] = [];
  for (const a of attachments) {
    const fragment = copyObject(a.fragment);
    const problem = a.path.length === 0 ? mergeAtRoot(schema, fragment) : place(schema, a.path, fragment);
    if (problem) return problem;
    for (const r of a.regimes) regimes.push({ path: [...a.path, ...r.path], regime: r.regime });
  }
  return { ok: true, schema, regimes };
}

/** Deepest nesting `substituteParameters` walks; fragments are bounded schemas (64 levels). */
const MAX_FRAGMENT_DEPTH = 64;

type Substituted = { ok: true; value: unknown } | { ok: false; error: string };

/** `{"$parameter": "p"}` and nothing else: a reference to parameter p. */
function parameterName(node: Record<string, unknown>): string | null {
  const keys = Object.keys(node);
  return keys.length === 1 && keys[0] === "$parameter" && typeof node.$parameter === "string" ? node.$parameter : null;
}

/**
 * A copy of `fragment` with every `{"$parameter": p}` node replaced by a copy of `params[p]`.
 * Substituted values are not searched again, so a parameter value cannot inject a reference.
 * A referenced parameter without a value is an error (a default is the caller's to fill in).
 */
export function substituteParameters(fragment: unknown, params: Record<string, unknown>): Substituted {
  const walk = (node: unknown, depth: number): Substituted => {
    if (depth > MAX_FRAGMENT_DEPTH) return fail(`the fragment nests more than ${MAX_FRAGMENT_DEPTH} levels`);
    if (Array.isArray(node)) {
      const out: unknown[] = [];
      for (const item of node) {
        const r = walk(item, depth + 1);
        if (!r.ok) return r;
        out.push(r.value);
      }
      return { ok: true, value: out };
    }
    if (!isPlainObject(node)) return { ok: true, value: node };
    const name = parameterName(node);
    if (name !== null) {
      // Own keys only: a parameter called "constructor" must not find Object's.
      if (!Object.hasOwn(params, name) || params[name] === undefined) return fail("the fragment references a parameter that has no value");
      return { ok: true, value: copyJson(params[name]) };
    }
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(node)) {
      const r = walk(child, depth + 1);
      if (!r.ok) return r;
      setOwn(out, key, r.value);
    }
    return { ok: true, value: out };
  };
  return walk(fragment, 0);
}
