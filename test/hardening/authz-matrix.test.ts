/**
 * The authorization matrix: every door in the route table × every
 * kind of caller, checked against the tag, action and admin flag the door declares (decisions §2).
 * Doors are read from `registry`, so a door declared later is covered by being declared.
 *
 * Callers, per scope tag the table uses (`T`):
 *   no key · invalid key (well-formed, unknown) · disabled key (T:write, disabled)
 *   narrow reader (T:read) · writer (T:write) · owned key (T:write, owned by the writer)
 *   other tag (U:write for another tag U of the table) · condition false (T:write, condition `false`)
 *   admin
 *
 * A door declared `revokesCaller` (logout) is called with a throwaway key of each kind instead of
 * the shared one, so the suite's own keys outlive it.
 *
 * Expected, from the declaration alone:
 *   public door         the credential changes nothing: every caller gets the no-key answer, and
 *                       it is never a key refusal (webhooks refuse bad provider signatures, alike
 *                       for everyone)
 *   no key              401 {"error":"Authentication required"}
 *   invalid / disabled  401 {"error":"Unauthorized"}
 *   authenticated door  any valid key passes (no scope or condition check)
 *   admin door          403 {"error":"Forbidden"} for every non-admin; the admin passes
 *   tagged door         reader passes reads and gets 403 on writes; writer and owned key pass;
 *                       other tag and condition false get 403; the admin passes
 *
 * "Passes" means neither 401 nor 403: authorization runs before path, query and body validation
 * (src/platform/http/route.ts), so the door may then answer 400 or 404 for the minimal request sent here.
 * One documented refinement beyond the declaration: decisions §2 — an owned key cannot mint keys,
 * and src/access-control/routes/auth.ts lets owned keys manage none — so an owned key may get 403 on `auth`
 * write doors once the handler runs. Another: the agent run doors need, besides `agents:read`, a
 * run grant for the agent named in the path (docs/targets.md), so a narrow reader may get the
 * generic 403 there once the handler runs.
 */
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Answer,
  type Requirement,
  type RouteSpec,
  bootstrapAdmin,
  callJson,
  dispatch,
  doors,
  fillPath,
  label,
  pathParamNames,
  requirementOf,
} from "./doors";
import { must } from "../../src/platform/must";

const CALLERS = ["no key", "invalid key", "disabled key", "narrow reader", "writer", "owned key", "other tag", "condition false", "admin"] as const;
type Caller = (typeof CALLERS)[number];

interface Key {
  user_id: string;
  key: string;
}

type Expectation =
  | { kind: "refused"; status: 401 | 403; error: string }
  | { kind: "passes" }
  /** Passes the declared grant; a documented handler policy may still answer 403. */
  | { kind: "passes-or-policy-403"; policy: string }
  | { kind: "public" };

const AUTH_REQUIRED = { kind: "refused", status: 401, error: "Authentication required" } as const;
const UNAUTHORIZED = { kind: "refused", status: 401, error: "Unauthorized" } as const;
const FORBIDDEN = { kind: "refused", status: 403, error: "Forbidden" } as const;
const PASSES = { kind: "passes" } as const;

/** Doors that also need a run grant for the agent their path names (`agent:<name>`, `agents:write`, `*`). */
const RUN_GRANT_DOORS = new Set(["POST /api/agents/{name}/runs", "POST /api/agents/authored/{name}/runs"]);

/** What the declaration says `caller` gets at a door with requirement `req`. */
function expectation(req: Requirement, caller: Caller, door?: RouteSpec): Expectation {
  if (req.kind === "public") return { kind: "public" };
  if (caller === "no key") return AUTH_REQUIRED;
  if (caller === "invalid key" || caller === "disabled key") return UNAUTHORIZED;
  if (req.kind === "authenticated" || caller === "admin") return PASSES;
  if (req.admin) return FORBIDDEN;
  switch (caller) {
    case "narrow reader":
      if (req.action === "read" && door && RUN_GRANT_DOORS.has(label(door)))
        return { kind: "passes-or-policy-403", policy: "an agent run also needs a run grant for the agent" };
      return req.action === "read" ? PASSES : FORBIDDEN;
    case "writer":
      return PASSES;
    case "owned key":
      return req.tag === "auth" && req.action === "write"
        ? { kind: "passes-or-policy-403", policy: "decisions §2: owned keys cannot mint or manage keys" }
        : PASSES;
    case "other tag":
    case "condition false":
      return FORBIDDEN;
  }
}

const DOORS = doors();
const TAGS = [...new Set(DOORS.map(requirementOf).flatMap((r) => (r.kind === "tag" ? [r.tag] : [])))];
const CASES = DOORS.length * CALLERS.length;

let ADMIN: Key;
/** Callers per tag (the admin and the keyless ones are shared). */
const callers = new Map<string, Record<Exclude<Caller, "no key" | "invalid key" | "admin">, Key>>();
let counter = 0;

async function mint(spec: { scopes: string[]; condition?: string; owner_user_id?: string }): Promise<Key> {
  counter += 1;
  const user_id = `authz-${counter}-${Date.now().toString(36)}`;
  const r = await callJson("POST", "/api/auth/api-keys", ADMIN.key, { user_id, ...spec });
  if (r.status !== 200) throw new Error(`mint failed: ${r.status} ${r.text}`);
  return { user_id, key: r.json.data.api_key };
}

type KeyedCaller = Exclude<Caller, "no key" | "invalid key">;

/** A fresh key of caller kind `kind` for `tag` (an owned key is owned by `writer`). */
async function mintCaller(kind: KeyedCaller, tag: string, writer: Key): Promise<Key> {
  const other = TAGS.find((t) => t !== tag) ?? (tag === "resources" ? "presets" : "resources");
  switch (kind) {
    case "admin":
      return mint({ scopes: ["*"] });
    case "disabled key": {
      const disabled = await mint({ scopes: [`${tag}:write`] });
      const off = await callJson("PUT", `/api/auth/api-keys/${disabled.user_id}`, ADMIN.key, { disabled: true });
      if (off.status !== 200) throw new Error(`disable failed: ${off.status} ${off.text}`);
      return disabled;
    }
    case "narrow reader":
      return mint({ scopes: [`${tag}:read`] });
    case "writer":
      return mint({ scopes: [`${tag}:write`] });
    case "owned key":
      // Scopes within the owner's, as decisions §2 requires of an owned key.
      return mint({ scopes: [`${tag}:write`], owner_user_id: writer.user_id });
    case "other tag":
      return mint({ scopes: [`${other}:write`] });
    case "condition false":
      return mint({ scopes: [`${tag}:write`], condition: "false" });
  }
}

async function callersFor(tag: string): Promise<Record<Exclude<Caller, "no key" | "invalid key" | "admin">, Key>> {
  const writer = await mintCaller("writer", tag, ADMIN);
  return {
    "disabled key": await mintCaller("disabled key", tag, writer),
    "narrow reader": await mintCaller("narrow reader", tag, writer),
    writer,
    "owned key": await mintCaller("owned key", tag, writer),
    "other tag": await mintCaller("other tag", tag, writer),
    "condition false": await mintCaller("condition false", tag, writer),
  };
}

/** A well-formed key (`sk-` + 43 url-safe characters) that was never minted. */
const INVALID_KEY = `sk-${"A".repeat(43)}`;

/**
 * The key `caller` sends to `door`. A door that ends its caller's key (`revokesCaller`, e.g.
 * logout) gets a throwaway key of the same kind, minted for this one request, so the shared
 * callers (the admin above all) survive it while the door is still called by every kind.
 */
async function keyOf(caller: Caller, tag: string, door: RouteSpec): Promise<Key | null> {
  if (caller === "no key") return null;
  if (caller === "invalid key") return { user_id: "nobody", key: INVALID_KEY };
  if (door.revokesCaller) return mintCaller(caller, tag, must(callers.get(tag), "callers.get(tag)").writer);
  if (caller === "admin") return ADMIN;
  return must(callers.get(tag), "callers.get(tag)")[caller];
}

/**
 * The request for `door` as `caller`: valid-looking path segments, no query, `{}` as the body of
 * a JSON door (an empty one for a raw-body webhook). A `{user_id}` segment names a fresh key the
 * caller owns, because key doors refuse non-admins on keys they do not own (a uniform 403 that
 * would hide whether the grant itself was honoured).
 */
async function requestFor(door: RouteSpec, caller: Caller, tag: string): Promise<Answer> {
  const key = await keyOf(caller, tag, door);
  const segments: Record<string, string> = {};
  for (const name of pathParamNames(door.path)) {
    if (name === "user_id" && key && caller !== "invalid key") {
      // An owned key cannot own keys; its target is owned by its owner (it may manage none anyway).
      const owner = caller === "owned key" ? must(callers.get(tag), "callers.get(tag)").writer : key;
      segments[name] = (await mint({ scopes: [], owner_user_id: caller === "admin" ? undefined : owner.user_id })).user_id;
    } else {
      segments[name] = "authz-probe";
    }
  }
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key) headers["x-api-key"] = key.key;
  const body = door.body ? "{}" : door.rawBody ? "" : undefined;
  return dispatch(door.method, fillPath(door.path, segments), { headers, body });
}

/** A mismatch between an answer and its expectation, or null. */
function mismatch(expect: Expectation, a: Answer, publicBaseline: number | null): string | null {
  const keyRefusal = a.status === 401 && (a.json?.error === "Authentication required" || a.json?.error === "Unauthorized");
  switch (expect.kind) {
    case "refused":
      return a.status === expect.status && a.json?.error === expect.error && Object.keys(a.json ?? {}).length === 1
        ? null
        : `expected ${expect.status} {"error":"${expect.error}"}, got ${a.status} ${a.text.slice(0, 200)}`;
    case "passes":
      return a.status === 401 || a.status === 403 ? `expected to pass authorization, got ${a.status} ${a.text.slice(0, 200)}` : null;
    case "passes-or-policy-403":
      if (a.status === 401) return `expected to pass authentication, got 401 ${a.text.slice(0, 200)}`;
      return a.status === 403 && a.json?.error !== "Forbidden" ? `a policy refusal must be the generic 403, got ${a.text.slice(0, 200)}` : null;
    case "public":
      if (keyRefusal) return `public door refused a key: ${a.status} ${a.text.slice(0, 200)}`;
      return publicBaseline !== null && a.status !== publicBaseline ? `public door answered ${a.status}, but ${publicBaseline} without a key` : null;
  }
}

/** The tag whose callers a door is tried with (public and authenticated doors use the first). */
function tagOf(door: RouteSpec): string {
  const req = requirementOf(door);
  return req.kind === "tag" ? req.tag : TAGS[0];
}

describe(`authorization matrix: ${DOORS.length} doors × ${CALLERS.length} callers = ${CASES} cases`, () => {
  beforeAll(async () => {
    ADMIN = { user_id: "root", key: await bootstrapAdmin() };
    for (const tag of TAGS) callers.set(tag, await callersFor(tag));
    console.log(`authorization matrix: ${DOORS.length} doors × ${CALLERS.length} callers = ${CASES} cases over tags ${TAGS.join(", ")}`);
  });

  it("covers the same table the Worker serves", async () => {
    const doc = (await callJson("GET", "/api/openapi.json", null)).json as { paths: Record<string, Record<string, unknown>> };
    const served = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(DOORS.map(label).sort()).toEqual(served.sort());
  });

  for (const door of DOORS) {
    const req = requirementOf(door);
    const declared = req.kind === "tag" ? `${req.tag}:${req.action}${req.admin ? ", admin" : ""}` : req.kind;
    it(`${label(door)} (${declared})`, { timeout: 30_000 }, async () => {
      const tag = tagOf(door);
      const problems: string[] = [];
      let baseline: number | null = null;
      for (const caller of CALLERS) {
        const answer = await requestFor(door, caller, tag);
        if (req.kind === "public" && caller === "no key") baseline = answer.status;
        const problem = mismatch(expectation(req, caller, door), answer, baseline);
        if (problem) problems.push(`${caller}: ${problem}`);
      }
      expect(problems).toEqual([]);
    });
  }
});
