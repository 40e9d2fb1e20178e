/**
 * Property-based fuzzing of every door in the route table. For each
 * registered door, fast-check generates path parameters, query values and bodies (random JSON,
 * hostile JSON text, and objects built from the door's own schema so validation gets past the
 * first field) and sends them as the admin (so authentication never short-circuits) and, for a
 * sample, with no key. Every answer must hold three invariants:
 *
 *   1. no 5xx, except documented failure codes (501 `*-not-configured`; 500 `tool-*`, the run-tool
 *      contract of decisions §4: "a tool failure 500 with its message");
 *   2. an error answer (or an SSE `stream.error` frame) never echoes the marker planted in the input;
 *   3. no answer carries a stack trace.
 *
 * Doors are read from `registry`, so a door declared later is fuzzed without touching this file.
 * The marker is only checked on error answers: a success legitimately returns stored input (a
 * created resource's content, the echo tool's answer).
 *
 * The doors are dealt round-robin to the `fuzz-N.test.ts` files, each calling `fuzzDoors(N, of)`, so
 * the suite's slots share the fuzzing instead of one slot carrying all of it.
 *
 * Replay a failure: FUZZ_SEED=<seed printed in the failure> npx vitest run --project workers test/hardening/fuzz-<N>.test.ts -t "<door>"
 * Fuzz deeper:      FUZZ_RUNS=300 npx vitest run --project workers test/hardening/fuzz-
 */
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type Answer,
  BASE,
  type JsonSchema,
  type RouteSpec,
  bootstrapAdmin,
  callJson,
  dispatch,
  doors,
  fillPath,
  jsonSchemaOf,
  label,
  pathParamNames,
  requirementOf,
} from "./doors";
import { must } from "../../src/platform/must";
import { clearNetwork, fakeNetwork } from "../helpers/network";

// ---------------------------------------------------------------------------------------------
// Seed, budget, marker

function seedFromEnv(): number {
  const raw = String(env.FUZZ_SEED ?? "").trim();
  if (raw === "") return (Math.random() * 0x7fffffff) | 0;
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new Error(`FUZZ_SEED must be an integer, got ${JSON.stringify(raw)}`);
  return n | 0;
}

const SEED = seedFromEnv();
/** Runs per door. Kept small so the file stays well under a minute on two busy cores. */
const RUNS = Number(env.FUZZ_RUNS) > 0 ? Math.floor(Number(env.FUZZ_RUNS)) : 30;
/** Lower-case alphanumerics only, so it also fits name patterns (route names, ids) and reaches
 * handlers instead of stopping at validation. Derived from the seed so a replay plants the same. */
const TOKEN = `fzq${(SEED >>> 0).toString(36).padStart(7, "0")}mk`;
const MARKER = `MARKER_${TOKEN}`;

// ---------------------------------------------------------------------------------------------
// Fixtures: real entities whose names the generators mix in, so inputs reach the handlers' deeper
// paths (a route that exists, a thread that exists) rather than stopping at "not found". None of
// their names contains the marker. The admin key (`root`) is never a generated target.

const CHANNELS = ["twilio", "whatsapp", "telegram", "slack"] as const;
const FX = {
  route: "fx-route",
  telegramRoute: "fx-telegram",
  slackRoute: "fx-slack",
  resource: "fx-resource",
  tool: "fx-tool",
  agent: "fx-agent",
  preset: "fx-preset",
  user: "fx-user",
  address: "fx-address",
  thread: "",
  message: "",
};
let ADMIN = "";

/** Values that name fixtures, by parameter or property name (entity names, not doors). */
function fixturesFor(name: string): unknown[] {
  switch (name) {
    case "route_name":
      return [FX.route, FX.route, FX.telegramRoute];
    case "name":
      return [FX.preset, "echo", FX.agent];
    case "tool_name":
    case "base_tool":
    case "target_name":
      return ["echo", FX.tool, FX.preset];
    case "title":
      return [FX.tool, FX.agent];
    case "resource_id":
    case "id":
      return [FX.resource];
    case "user_id":
    case "owner_user_id":
      return [FX.user];
    case "execution_key":
      return [FX.user, "root"];
    case "message_id":
      return FX.message ? [FX.message] : [];
    case "thread_id":
      return FX.thread ? [FX.thread] : [];
    case "channel":
      return [...CHANNELS];
    case "version":
      return [1, "1"];
    case "external_user_id":
    case "address":
      return [FX.address];
    case "url":
    case "base_url":
    case "callback_url":
      return ["https://fuzz-upstream.example/hook"];
    default:
      return [];
  }
}

/** Best effort: a fuzzed door may have deleted or disabled a fixture; later doors want it back. */
async function ensureFixtures(): Promise<void> {
  const key = ADMIN;
  await callJson("POST", "/api/auth/api-keys", key, { user_id: FX.user, scopes: ["tool:echo", "agent:echo"] });
  await callJson("PUT", `/api/auth/api-keys/${FX.user}`, key, { disabled: false, condition: null, scopes: ["tool:echo", "agent:echo"] });
  await callJson("POST", "/api/storage/resources", key, { id: FX.resource, content: "fixture" });
  await callJson("POST", "/api/tools-config/entries", key, { title: FX.tool, kind: "http", url: "https://fuzz-tool.example/run" });
  await callJson("POST", "/api/agents-config/entries", key, { title: FX.agent, kind: "http", config: { url: "https://fuzz-agent.example/run" } });
  await callJson("POST", "/api/presets", key, { name: FX.preset, base_tool: "echo" });
  const routeBody = { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root" };
  await callJson("POST", `/api/conversations/${FX.route}`, key, routeBody);
  // Channel routes on the test bots' own identities, so signed webhooks run real turns.
  await callJson("POST", `/api/conversations/${FX.telegramRoute}`, key, { ...routeBody, door: "channel", channel: "telegram", our_identity: "123456" });
  await callJson("POST", `/api/conversations/${FX.slackRoute}`, key, { ...routeBody, door: "channel", channel: "slack", our_identity: "UBOTTEST" });
  const sent = await callJson("POST", `/api/conversations/${FX.route}/messages`, key, { external_user_id: FX.address, text: "fixture" });
  if (sent.status === 202) {
    FX.thread = sent.json.data.thread_id;
    FX.message = sent.json.data.message_id;
  }
}

/** A hermetic network: providers answer like their APIs, anything else answers plain JSON. */
function fakeUpstreams(): void {
  fakeNetwork((req) => {
    const host = new URL(req.url).host;
    if (host === "twilio.fake") return Response.json({ sid: `SM${crypto.randomUUID().replace(/-/g, "")}` }, { status: 201 });
    if (host === "whatsapp.fake") return Response.json({ messaging_product: "whatsapp", messages: [{ id: `wamid.${crypto.randomUUID()}` }] });
    if (host === "telegram.fake") return Response.json({ ok: true, result: { message_id: 1 } });
    if (host === "slack.fake") return Response.json({ ok: true, ts: `${Date.now()}.000100` });
    return Response.json({ result: "fuzz upstream" });
  });
}

// ---------------------------------------------------------------------------------------------
// Hostile values

/** `arb` in `percent` % of cases, else null (fc.option's `freq` is the odds of null instead). */
function sometimes<T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: percent, arbitrary: arb }, { weight: 100 - percent, arbitrary: fc.constant(null) });
}

/** JSON text fragments a JS value cannot express; planted through placeholders after stringify. */
const RAW_FRAGMENTS = [
  "1e400",
  "-1e400",
  "1E-400",
  "123456789012345678901234567890123456789",
  "-0",
  '"\\uD800"',
  `"\\uDBFF${MARKER}"`,
  `"${MARKER}\\uDC00"`,
  `"\\u0000${MARKER}"`,
  `"\\u202E${MARKER}"`,
  `${"[".repeat(80)}"${MARKER}"${"]".repeat(80)}`,
  `${'{"a":'.repeat(80)}"${MARKER}"${"}".repeat(80)}`,
  `{"__proto__":{"polluted":"${MARKER}"}}`,
  `{"constructor":{"prototype":{"polluted":"${MARKER}"}}}`,
];
const RAW_PLACEHOLDER = /"__FZRAW_(\d+)__"/g;
const rawFragment = fc.nat({ max: RAW_FRAGMENTS.length - 1 }).map((i) => `__FZRAW_${i}__`);

/** JSON.stringify, then the placeholders replaced by their raw fragments. */
function toJsonText(value: unknown): string {
  return JSON.stringify(value).replace(RAW_PLACEHOLDER, (_, i: string) => RAW_FRAGMENTS[Number(i)]);
}

const specialStrings = fc.constantFrom(
  MARKER,
  "",
  " ",
  "\u0000",
  `\u0000${MARKER}`,
  "\uD800",
  `\uDFFF${MARKER}`,
  `${MARKER}\uD83D`,
  `\u202E${MARKER}`,
  "..",
  `../../${MARKER}`,
  "%00",
  `'; DROP TABLE routes; --${MARKER}`,
  `{{${MARKER}}}`,
  `<script>${MARKER}</script>`,
  `${"x".repeat(5000)}${MARKER}`,
  `${MARKER}\n${MARKER}`,
  "bridge:fx-route:root:fx-address",
);

const wildString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: specialStrings },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 24 }).map((s) => `${s}${MARKER}`) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 16 }).map((s) => `${MARKER}${s}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
);

const wildValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: wildString },
  { weight: 2, arbitrary: rawFragment },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, 2 ** 53, -(2 ** 63), 1e308, 0.5) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.array(wildString, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), wildString, { maxKeys: 3 }) },
);

// ---------------------------------------------------------------------------------------------
// Values shaped by a door's own JSON Schema (as the OpenAPI document renders it)

function regexOf(pattern: unknown): RegExp | null {
  if (typeof pattern !== "string") return null;
  try {
    return new RegExp(pattern);
  } catch {
    return null;
  }
}

function resolveRef(ref: string, root: JsonSchema): JsonSchema | null {
  if (ref === "#") return root;
  const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  const defs = m ? (root[m[1]] as Record<string, JsonSchema> | undefined) : undefined;
  return m && defs ? (defs[m[2]] ?? null) : null;
}

/** Strings matching `re`, or the marker when fast-check cannot generate from that regex. */
function matching(re: RegExp): fc.Arbitrary<string> {
  try {
    return fc.stringMatching(re, { size: "small" });
  } catch {
    return fc.constant(MARKER);
  }
}

/** A string that satisfies the schema when it can, with the marker wherever it fits. */
function conformingString(s: JsonSchema, name: string): fc.Arbitrary<string> {
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as string[]));
  const re = regexOf(s.pattern);
  // The marker goes wherever the pattern lets it (free text always).
  const options: fc.Arbitrary<string>[] = re && !re.test(MARKER) ? [] : [fc.constant(MARKER)];
  if (re) {
    // Never the admin's own user id: a generated key id must not disable or revoke the fuzzer.
    options.push(matching(re).filter((v) => v !== "root"));
    if (re.test(TOKEN)) options.push(fc.constant(TOKEN));
    if (re.test(`${TOKEN}-x`)) options.push(fc.constant(`${TOKEN}-x`));
  }
  if (/url|uri/i.test(name) || s.format === "uri") options.push(fc.constant(`https://fuzz-upstream.example/${TOKEN}`));
  return options.length ? fc.oneof(...options) : fc.constant(MARKER);
}

function conformingNumber(s: JsonSchema): fc.Arbitrary<number> {
  const min = typeof s.minimum === "number" ? s.minimum : typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum : -1e6;
  const max = typeof s.maximum === "number" ? s.maximum : typeof s.exclusiveMaximum === "number" ? s.exclusiveMaximum : 1e6;
  if (s.type === "integer") {
    const lo = Math.max(Math.ceil(min), Number.MIN_SAFE_INTEGER);
    const hi = Math.min(Math.floor(max), Number.MAX_SAFE_INTEGER);
    return lo <= hi ? fc.integer({ min: lo, max: hi }) : fc.integer();
  }
  return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/**
 * How hostile a schema-shaped value is: a `clean` one conforms at every field (fixture names where
 * they exist, the marker in free text) so it reaches the handler; a `hostile` one puts a wild
 * value (wrong type, hostile string, raw JSON fragment) in about one field of four and sometimes
 * adds an unknown field, so every validator and refusal path gets exercised too.
 */
type Mode = { wild: number; required: number; optional: number; stray: number };
// Optional fields are rarer in clean bodies: cross-field rules (exactly one of two fields, fields
// only for one kind) are refinements the JSON Schema cannot show, and fewer fields pass them more.
const CLEAN: Mode = { wild: 0, required: 1, optional: 0.3, stray: 0 };
/** Required fields only: passes most cross-field rules, so the handler runs. */
const MINIMAL: Mode = { wild: 0, required: 1, optional: 0, stray: 0 };
const HOSTILE: Mode = { wild: 4, required: 0.85, optional: 0.5, stray: 15 };

function fromSchema(s: JsonSchema | null, root: JsonSchema, name: string, depth: number, mode: Mode): fc.Arbitrary<unknown> {
  const fixtures = fixturesFor(name);
  const parts: Array<fc.WeightedArbitrary<unknown>> = [{ weight: 10, arbitrary: shapedBySchema(s, root, name, depth, mode) }];
  if (mode.wild) parts.push({ weight: mode.wild, arbitrary: wildValue });
  if (fixtures.length) parts.push({ weight: 8, arbitrary: fc.constantFrom(...fixtures) });
  return fc.oneof(...parts);
}

function shapedBySchema(s: JsonSchema | null, root: JsonSchema, name: string, depth: number, mode: Mode): fc.Arbitrary<unknown> {
  if (!s || depth > 6) return fc.jsonValue({ maxDepth: 1 });
  if (typeof s.$ref === "string") return shapedBySchema(resolveRef(s.$ref, root), root, name, depth + 1, mode);
  if ("const" in s) return fc.constant(s.const);
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = s[key];
    if (Array.isArray(branches) && branches.length) return fc.oneof(...branches.map((b) => shapedBySchema(b as JsonSchema, root, name, depth + 1, mode)));
  }
  if (Array.isArray(s.allOf) && s.allOf.length) return shapedBySchema(s.allOf[0] as JsonSchema, root, name, depth + 1, mode);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const type = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === "string" ? [s.type] : [];
  if (type.length > 1) return fc.oneof(...type.map((t) => shapedBySchema({ ...s, type: t }, root, name, depth, mode)));
  switch (type[0]) {
    case "string":
      return conformingString(s, name);
    case "number":
    case "integer":
      return conformingNumber(s);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const items = (s.items as JsonSchema | undefined) ?? null;
      const minLength = typeof s.minItems === "number" ? Math.min(s.minItems, 3) : 0;
      return fc.array(fromSchema(items, root, name, depth + 1, mode), { minLength, maxLength: Math.max(minLength, 3) });
    }
    case "object":
      return objectFromSchema(s, root, depth, mode);
    default:
      // `{}` (unknown) and anything the converter rendered loosely.
      if (s.properties) return objectFromSchema(s, root, depth, mode);
      return mode.wild ? fc.oneof(fc.jsonValue({ maxDepth: 2 }), wildString) : fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(MARKER));
  }
}

function objectFromSchema(s: JsonSchema, root: JsonSchema, depth: number, mode: Mode): fc.Arbitrary<Record<string, unknown>> {
  const props = (s.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((s.required as string[] | undefined) ?? []);
  const entries = Object.entries(props).map(([key, sub]) =>
    // An unbiased roll: fast-check biases numbers toward their bounds, which would include nearly every field.
    fc.tuple(fc.constant(key), fromSchema(sub, root, key, depth + 1, mode), fc.noBias(fc.nat({ max: 99 }))),
  );
  // Records: keys follow `propertyNames` when the schema states it, values their own schema.
  const keyRe = regexOf((s.propertyNames as JsonSchema | undefined)?.pattern);
  // Clean keys are plain identifiers: a door may bound keys in a refinement the schema cannot show.
  const keys = mode.wild ? fc.string({ maxLength: 10 }) : matching(keyRe ?? /^[a-z][a-z0-9_]{0,8}$/);
  const extra =
    s.additionalProperties && typeof s.additionalProperties === "object"
      ? fc.dictionary(keys, fromSchema(s.additionalProperties as JsonSchema, root, "", depth + 1, mode), { maxKeys: 3 })
      : fc.constant({});
  // An unknown field now and then: every door must refuse it cleanly (strict bodies).
  const stray = sometimes(fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), wildValue), mode.stray);
  return fc.tuple(fc.tuple(...entries), extra, stray).map(([picked, more, unknown]) => {
    const out: Record<string, unknown> = { ...(more as Record<string, unknown>) };
    for (const [key, value, roll] of picked) if (roll < 100 * (required.has(key) ? mode.required : mode.optional)) out[key] = value;
    if (unknown) out[unknown[0]] = unknown[1];
    return out;
  });
}

// ---------------------------------------------------------------------------------------------
// Requests

interface FuzzRequest {
  principal: "admin" | "none";
  method: string;
  path: string;
  query: string;
  body?: string;
  headers: Record<string, string>;
}

const hexByte = (b: number) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`;

/** encodeURIComponent, except that lone surrogates (which it refuses) go out as their raw
 * three-byte (invalid UTF-8) encoding, so the Worker has to cope with them too. */
function encode(s: string): string {
  let out = "";
  for (const ch of s) {
    const cp = must(ch.codePointAt(0), "ch.codePointAt(0)");
    if (cp >= 0xd800 && cp <= 0xdfff) out += hexByte(0xe0 | (cp >> 12)) + hexByte(0x80 | ((cp >> 6) & 0x3f)) + hexByte(0x80 | (cp & 0x3f));
    else out += encodeURIComponent(ch);
  }
  return out;
}

/** Path segments as they travel: raw hostile encodings and encoded generated values. */
const rawSegments = fc.constantFrom(
  "..",
  ".",
  "",
  "%00",
  "%2e%2e",
  "%2F",
  "%2f..%2f",
  "%FF",
  "%ED%A0%80",
  "%C0%AE",
  "%20",
  "%09",
  `${TOKEN}%00`,
  "%25",
  "%",
  `%E2%80%AE${TOKEN}`,
  ";",
  "%3F",
);

function segmentArb(name: string, s: JsonSchema | null): fc.Arbitrary<string> {
  const fixtures = fixturesFor(name).map(String);
  const conforming = s ? conformingString(s, name) : fc.constant(TOKEN);
  const hostile = fc.oneof(
    { weight: 1, arbitrary: fc.constant(TOKEN) },
    { weight: 3, arbitrary: wildString },
    { weight: 1, arbitrary: fc.constant(`${"a".repeat(3000)}${TOKEN}`) },
  );
  // About one segment in seven is hostile; the rest name fixtures or fit the parameter's schema,
  // so most requests get past path validation into the body and the handler.
  const parts: Array<fc.WeightedArbitrary<string>> = [
    { weight: 5, arbitrary: conforming.map(encode) },
    { weight: 1, arbitrary: hostile.map(encode) },
    { weight: 1, arbitrary: rawSegments },
  ];
  if (fixtures.length) parts.push({ weight: 7, arbitrary: fc.constantFrom(...fixtures).map(encode) });
  return fc.oneof(...parts);
}

function pathArb(spec: RouteSpec): fc.Arbitrary<string> {
  const names = pathParamNames(spec.path);
  const props = (jsonSchemaOf(spec.params)?.properties ?? {}) as Record<string, JsonSchema>;
  return fc
    .tuple(...names.map((n) => segmentArb(n, props[n] ?? null)))
    .map((segs) => fillPath(spec.path, Object.fromEntries(names.map((n, i) => [n, segs[i]]))));
}

function queryValueArb(name: string, s: JsonSchema, hostile: boolean): fc.Arbitrary<string> {
  const fixtures = fixturesFor(name).map(String);
  const parts: Array<fc.WeightedArbitrary<string>> = [{ weight: 4, arbitrary: conformingString({ ...s, type: "string" }, name) }];
  if (fixtures.length) parts.push({ weight: 4, arbitrary: fc.constantFrom(...fixtures) });
  if (hostile) {
    parts.push({ weight: 2, arbitrary: fc.constantFrom("1", "0", "-1", "200", "201", "99999999999999999999999", "1e3", "NaN", "asc", "desc", "") });
    parts.push({ weight: 4, arbitrary: wildString });
  }
  return fc.oneof(...parts).map(encode);
}

function queryArb(spec: RouteSpec): fc.Arbitrary<string> {
  const q = jsonSchemaOf(spec.query);
  const props = (q?.properties ?? {}) as Record<string, JsonSchema>;
  // Like bodies: a clean query (values that fit) or a hostile one.
  const declared = (hostile: boolean) =>
    fc.tuple(
      ...Object.entries(props).map(([name, s]) =>
        sometimes(
          queryValueArb(name, s, hostile).map((v) => `${encode(name)}=${v}`),
          70,
        ),
      ),
    );
  const extra = sometimes(
    fc.oneof(
      fc.constantFrom("%FF=%FF", "page=1&page=2", "=", "&&", `${TOKEN}=%00`, "thread_id=%ED%A0%80", "a[b]=c"),
      fc.tuple(wildString, wildString).map(([k, v]) => `${encode(k)}=${encode(v)}`),
    ),
    30,
  );
  const clean = declared(false).map((pairs) => pairs.filter((p): p is string => p !== null).join("&"));
  const hostile = fc.tuple(declared(true), extra).map(([pairs, more]) => [...pairs, more].filter((p): p is string => p !== null).join("&"));
  return fc.oneof({ weight: 3, arbitrary: clean }, { weight: 2, arbitrary: hostile });
}

/** JSON-ish bodies: schema-shaped objects most of the time, then random and broken JSON text. */
function jsonBodyArb(spec: RouteSpec): fc.Arbitrary<string | undefined> {
  const schema = jsonSchemaOf(spec.body);
  const shaped = (mode: Mode) => (schema ? shapedBySchema(schema, schema, "", 0, mode).map(toJsonText) : fc.constant("{}"));
  return fc.oneof(
    { weight: 4, arbitrary: shaped(CLEAN) },
    { weight: 2, arbitrary: shaped(MINIMAL) },
    { weight: 3, arbitrary: shaped(HOSTILE) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.object({ maxDepth: 2 }).map((v) => toJsonText(v)) },
    { weight: 1, arbitrary: rawFragment.map((p) => toJsonText(p)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<string | undefined>(undefined, "", "{", "nul", "\uFEFF{}", "[]", "null", `"${MARKER}"`, '{"a":1,}', `{"${MARKER}":`, "\u0000"),
    },
  );
}

// Webhooks authenticate by the provider's signature on the raw bytes, so they get raw bodies,
// provider-shaped payloads with hostile leaves, and headers that are absent, forged or valid
// (signed with the test secrets) so verified payloads reach the adapters' parsers and the bridge.

/** A template with some leaves swapped for hostile values and some keys dropped. */
function mutated(template: unknown, depth = 0): fc.Arbitrary<unknown> {
  if (Array.isArray(template)) return fc.tuple(...template.map((t) => mutated(t, depth + 1)));
  if (template && typeof template === "object") {
    const entries = Object.entries(template).map(([k, v]) => fc.tuple(fc.constant(k), mutated(v, depth + 1), fc.boolean()));
    return fc.tuple(...entries).map((es) => Object.fromEntries(es.filter(([, , drop]) => !drop || depth === 0).map(([k, v]) => [k, v])));
  }
  return fc.oneof({ weight: 3, arbitrary: fc.constant(template) }, { weight: 1, arbitrary: wildValue });
}

const PROVIDER_SHAPES: Record<string, unknown> = {
  telegram: { update_id: 1001, message: { message_id: 7, chat: { id: 42, type: "private" }, from: { id: 42 }, text: MARKER } },
  slack: {
    type: "event_callback",
    event_id: "Ev1",
    team_id: "T1",
    event: { type: "message", channel: "D1", user: "U1", text: MARKER, ts: "1700000000.000100" },
  },
  whatsapp: {
    object: "whatsapp_business_account",
    entry: [
      {
        id: "1",
        changes: [
          {
            field: "messages",
            value: { metadata: { phone_number_id: "15550001" }, messages: [{ id: "wamid.1", from: "15551234", type: "text", text: { body: MARKER } }] },
          },
        ],
      },
    ],
  },
};
const slackChallenge = { type: "url_verification", challenge: MARKER };

function formOf(v: unknown): string {
  const p = new URLSearchParams();
  if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) p.append(k, typeof x === "string" ? x : (JSON.stringify(x) ?? ""));
  return p.toString();
}

function signed(channel: string, path: string, body: string): Record<string, string> {
  const hmac = (alg: "sha1" | "sha256", key: string, data: string, enc: "hex" | "base64") => createHmac(alg, key).update(data, "utf8").digest(enc);
  switch (channel) {
    case "telegram":
      return { "x-telegram-bot-api-secret-token": String(env.CHANNEL_TELEGRAM_WEBHOOK_SECRET) };
    case "whatsapp":
      return { "x-hub-signature-256": `sha256=${hmac("sha256", String(env.CHANNEL_WHATSAPP_APP_SECRET), body, "hex")}` };
    case "slack": {
      const ts = String(Math.floor(Date.now() / 1000));
      return {
        "x-slack-request-timestamp": ts,
        "x-slack-signature": `v0=${hmac("sha256", String(env.CHANNEL_SLACK_SIGNING_SECRET), `v0:${ts}:${body}`, "hex")}`,
      };
    }
    case "twilio": {
      const url = new URL(`${BASE}${path}`);
      const params = [...new URLSearchParams(body)].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      const data = String(env.CHANNEL_TWILIO_PUBLIC_URL) + url.pathname + url.search + params.map(([k, v]) => k + v).join("");
      return { "x-twilio-signature": hmac("sha1", String(env.CHANNEL_TWILIO_AUTH_TOKEN), data, "base64") };
    }
    default:
      return {};
  }
}

const forgedHeaders = fc.record(
  {
    "x-telegram-bot-api-secret-token": wildString.map(encodeHeader),
    "x-hub-signature-256": wildString.map((s) => `sha256=${encodeHeader(s)}`),
    "x-slack-signature": fc.constant("v0=00"),
    "x-slack-request-timestamp": fc.constantFrom("0", "-1", "9999999999999", "NaN", `${Math.floor(Date.now() / 1000)}`),
    "x-twilio-signature": wildString.map(encodeHeader),
  },
  { requiredKeys: [] },
);

/** Header values must be ByteStrings without CR/LF; anything else goes out percent-encoded. */
function encodeHeader(s: string): string {
  return /^[\x20-\x7e]*$/.test(s) ? s : encode(s);
}

/** A public door under a `{channel}` path that reads the raw body or answers a provider handshake. */
function isWebhookDoor(spec: RouteSpec): boolean {
  return spec.rawBody === true || ("public" in spec.auth && pathParamNames(spec.path).includes("channel"));
}

function webhookArb(spec: RouteSpec): fc.Arbitrary<Omit<FuzzRequest, "principal">> {
  const names = pathParamNames(spec.path);
  const channelArb = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...CHANNELS) }, { weight: 1, arbitrary: segmentArb("channel", null) });
  const body = (channel: string): fc.Arbitrary<string> => {
    const shape = PROVIDER_SHAPES[channel];
    const twilioForm = mutated({ MessageSid: "SM1", From: "+15551234", To: "+15550001", Body: MARKER, MessageStatus: "delivered", NumMedia: "0" }).map(formOf);
    return fc.oneof(
      { weight: 4, arbitrary: channel === "twilio" ? twilioForm : shape ? mutated(shape).map(toJsonText) : fc.jsonValue().map((v) => JSON.stringify(v)) },
      { weight: 1, arbitrary: channel === "slack" ? mutated(slackChallenge).map(toJsonText) : twilioForm },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
      { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 64 }) },
      { weight: 1, arbitrary: fc.constantFrom("", "{", `${"[".repeat(80)}${"]".repeat(80)}`, `payload=${MARKER}`) },
    );
  };
  const handshake = fc.record({
    "hub.mode": fc.constantFrom("subscribe", "unsubscribe", MARKER),
    "hub.verify_token": fc.oneof(fc.constant(String(env.CHANNEL_WHATSAPP_VERIFY_TOKEN)), wildString),
    "hub.challenge": wildString,
  });
  return channelArb.chain((channel) =>
    fc.tuple(body(channel), fc.constantFrom("none", "forged", "valid", "valid"), forgedHeaders, sometimes(handshake, 50)).map(([raw, mode, forged, hub]) => {
      const path = fillPath(spec.path, Object.fromEntries(names.map((n) => [n, channel])));
      const query =
        hub && spec.method === "get"
          ? Object.entries(hub)
              .map(([k, v]) => `${encode(k)}=${encode(v)}`)
              .join("&")
          : "";
      const headers: Record<string, string> =
        mode === "valid" ? signed(channel, query ? `${path}?${query}` : path, raw) : mode === "forged" ? { ...(forged as Record<string, string>) } : {};
      if (channel === "twilio") headers["content-type"] = "application/x-www-form-urlencoded";
      else headers["content-type"] = "application/json";
      return { method: spec.method, path, query, body: spec.method === "get" ? undefined : raw, headers };
    }),
  );
}

/** Stands for a body one byte over the 1 MiB cap, expanded only when sent so reports stay short. */
const OVERSIZE = "<oversize body: 1 MiB + 1 byte>";
const OVERSIZE_BYTES = 1024 * 1024 + 1;

function requestArb(spec: RouteSpec): fc.Arbitrary<FuzzRequest> {
  // No key on a sample only: the admin key lets every request past authentication into the door.
  const principal = fc.oneof({ weight: 5, arbitrary: fc.constant("admin" as const) }, { weight: 1, arbitrary: fc.constant("none" as const) });
  // Provider webhook doors (the raw-body POSTs and the WhatsApp GET handshake on the same path)
  // speak the providers' protocols, which their zod schemas do not describe: see webhookArb.
  if (isWebhookDoor(spec)) {
    return fc.tuple(principal, webhookArb(spec)).map(([p, r]) => ({ principal: p, ...r }));
  }
  // Now and then another method on the door's path (405 with Allow, or a sibling door) and an
  // oversize body (413 before anything parses it).
  const method = fc.oneof(
    { weight: 14, arbitrary: fc.constant<string>(spec.method) },
    { weight: 1, arbitrary: fc.constantFrom("get", "post", "put", "patch", "delete", "options") },
  );
  const jsonish = spec.body
    ? jsonBodyArb(spec)
    : fc.option(
        fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
        { nil: undefined },
      );
  const body = fc.oneof({ weight: 20, arbitrary: jsonish }, { weight: 1, arbitrary: fc.constant<string | undefined>(OVERSIZE) });
  const contentType = fc.constantFrom("application/json", "application/json", "text/plain", "application/json; charset=utf-16", "");
  return fc.tuple(principal, method, pathArb(spec), queryArb(spec), body, contentType).map(([p, m, path, query, b, ct]) => ({
    principal: p,
    method: m,
    path,
    query,
    // GET cannot carry a body; a body sent to a body-less door must simply be ignored.
    body: m === "get" ? undefined : b,
    headers: (ct ? { "content-type": ct } : {}) as Record<string, string>,
  }));
}

// ---------------------------------------------------------------------------------------------
// Sending and judging

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    if (timer !== null) clearTimeout(timer);
  }
}

let spares = 0;

/**
 * The admin key a request to `spec` carries: the suite's own, except for a door that ends its
 * caller's key (`revokesCaller`, e.g. logout), which gets a fresh admin key minted for this one
 * request, so the fuzzer keeps its key while the door is still fuzzed as an admin.
 */
async function adminKeyFor(spec: RouteSpec): Promise<string> {
  if (!spec.revokesCaller) return ADMIN;
  spares += 1;
  const r = await callJson("POST", "/api/auth/api-keys", ADMIN, { user_id: `fx-spare-${spares}`, scopes: ["*"] });
  if (r.status !== 200) throw new Error(`minting a spare admin key failed: ${r.status} ${r.text}`);
  return r.json.data.api_key as string;
}

async function send(spec: RouteSpec, r: FuzzRequest): Promise<Answer> {
  const headers = { ...r.headers };
  if (r.principal === "admin") headers["x-api-key"] = await adminKeyFor(spec);
  const body = r.body === OVERSIZE ? `"${"x".repeat(OVERSIZE_BYTES - 2)}"` : r.body;
  // SSE doors stream until the run ends; a run that never ends is itself a finding.
  return withTimeout(dispatch(r.method, `${r.path}${r.query ? `?${r.query}` : ""}`, { headers, body }), 20_000, `${r.method.toUpperCase()} ${r.path}`);
}

/** JS stack frames, source positions and error-class prefixes: none may reach a client. */
const STACK_PATTERNS = [
  /\n\s*at\s+\S/,
  /\bat\s+[\w$.<>]+\s+\([^)]*:\d+:\d+\)/,
  /\.(?:ts|js|mjs|cjs):\d+/,
  /\b(?:Type|Reference|Syntax|Range|Eval|URI|Aggregate|Internal|DOMException)?Error: /,
  /\bUncaught\b/,
];

function parsed(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** 501 `*-not-configured` and run-tool's `tool-*` 500s are contract answers, not faults. */
function documentedFailure(a: Answer): boolean {
  const code = parsed(a.text)?.code;
  if (typeof code !== "string") return false;
  return (a.status === 501 && code.endsWith("-not-configured")) || (a.status === 500 && code.startsWith("tool-"));
}

/** The `stream.error` frames of an SSE answer: their messages are error messages too. */
function sseErrors(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ")) continue;
    const frame = parsed(line.slice(6));
    if (frame?.type === "stream.error") out.push(JSON.stringify(frame));
  }
  return out;
}

/** The problems with one answer, or none. */
function judge(a: Answer): string[] {
  const problems: string[] = [];
  if (a.status >= 500 && !documentedFailure(a)) problems.push(`status ${a.status}`);
  const errorTexts = a.status >= 400 ? [a.text] : (a.headers.get("content-type") ?? "").startsWith("text/event-stream") ? sseErrors(a.text) : [];
  if (errorTexts.some((t) => t.toLowerCase().includes(TOKEN))) problems.push("the error echoes the planted marker");
  // JSON escapes newlines, so look at the decoded form as well.
  const decoded = a.text.replace(/\\n/g, "\n");
  const stack = STACK_PATTERNS.find((re) => re.test(decoded));
  if (stack) problems.push(`stack trace (${stack})`);
  return problems;
}

function describeRequest(r: FuzzRequest): string {
  const body = r.body === undefined ? "(none)" : r.body.length > 600 ? `${r.body.slice(0, 600)}… (${r.body.length} chars)` : r.body;
  return `${r.principal} ${r.method.toUpperCase()} ${r.path}${r.query ? `?${r.query}` : ""}\n  headers: ${JSON.stringify(r.headers)}\n  body: ${body}`;
}

// ---------------------------------------------------------------------------------------------
// The suite

/**
 * Declares the fuzz suite for part `part` of `parts`: every `parts`-th door of the route table,
 * starting at the `part`-th. Part 1 also checks that the table is the one the Worker serves, and
 * the judge itself.
 */
export function fuzzDoors(part: number, parts: number): void {
  const all = doors();
  const DOORS = all.filter((_, i) => i % parts === part - 1);
  let requestsSent = 0;
  /** Answers by status class, printed at the end: shows how many requests got past validation. */
  const tally: Record<string, number> = {};

  describe(`fuzz, part ${part} of ${parts}: ${DOORS.length} of ${all.length} doors × ${RUNS} runs (seed ${SEED})`, () => {
    beforeAll(async () => {
      // Storage starts empty in every file: the fixtures of an earlier part are gone.
      FX.thread = "";
      FX.message = "";
      fakeUpstreams();
      ADMIN = await bootstrapAdmin();
      await ensureFixtures();
    });
    afterAll(() => {
      clearNetwork();
      const classes = Object.entries(tally)
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(", ");
      console.log(`fuzz, part ${part} of ${parts}: ${DOORS.length} doors, ${requestsSent} requests (${classes}), seed ${SEED} (replay: FUZZ_SEED=${SEED})`);
    });

    let dirty = false;
    beforeEach(async () => {
      // The workers setup clears the edge fetch after every test, so each door gets the fake network anew.
      fakeUpstreams();
      // Doors that write may have removed a fixture; reads leave them alone.
      if (dirty) await ensureFixtures();
      dirty = false;
    });

    if (part === 1) {
      it("fuzzes the same table the Worker serves", async () => {
        const doc = (await callJson("GET", "/api/openapi.json", null)).json as { paths: Record<string, Record<string, unknown>> };
        const served = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
        expect(all.map(label).sort()).toEqual(served.sort());
      });

      // The judge itself, so a suite that can never fail is caught here rather than trusted.
      it("judges a 5xx, an echoed marker and a stack trace as problems, and contract answers as none", () => {
        const answer = (status: number, body: unknown, contentType = "application/json"): Answer => {
          const text = typeof body === "string" ? body : JSON.stringify(body);
          return { status, text, headers: new Headers({ "content-type": contentType }), json: typeof body === "string" ? null : body };
        };
        expect(judge(answer(500, { error: "Internal Server Error", error_id: "abc" }))).toEqual(["status 500"]);
        expect(judge(answer(400, { error: `invalid body: ${MARKER}` }))).toEqual(["the error echoes the planted marker"]);
        expect(judge(answer(400, { error: `route ${TOKEN} is odd` }))).toEqual(["the error echoes the planted marker"]);
        expect(judge(answer(400, { error: "TypeError: x is not a function\n    at handler (src/app.ts:12:3)" })).length).toBeGreaterThan(0);
        expect(judge(answer(200, `data: {"type":"stream.error","message":"${MARKER}"}\n\n`, "text/event-stream"))).toEqual([
          "the error echoes the planted marker",
        ]);
        expect(judge(answer(200, { data: { content: MARKER } }))).toEqual([]);
        expect(judge(answer(501, { error: "not configured", code: "conversations-not-configured" }))).toEqual([]);
        expect(judge(answer(500, { error: "the tool failed", code: "tool-error" }))).toEqual([]);
      });
    }

    for (const spec of DOORS) {
      const req = requirementOf(spec);
      it(`${label(spec)} (${req.kind === "tag" ? `${req.tag}:${req.action}${req.admin ? ", admin" : ""}` : req.kind})`, { timeout: 120_000 }, async () => {
        dirty = spec.method !== "get";
        try {
          await fc.assert(
            fc.asyncProperty(requestArb(spec), async (r) => {
              const answer = await send(spec, r);
              requestsSent += 1;
              tally[`${Math.floor(answer.status / 100)}xx`] = (tally[`${Math.floor(answer.status / 100)}xx`] ?? 0) + 1;
              const problems = judge(answer);
              if (problems.length) {
                throw new Error(`${problems.join("; ")}\n  request: ${describeRequest(r)}\n  answer ${answer.status}: ${answer.text.slice(0, 800)}`);
              }
            }),
            { seed: SEED, numRuns: RUNS, includeErrorInReport: true },
          );
        } catch (err) {
          throw new Error(`fuzz failure on ${label(spec)}; replay with FUZZ_SEED=${SEED}\n${err instanceof Error ? err.message : String(err)}`);
        }
      });
    }
  });
}
