/**
 * Every 5xx has a documented cause (docs/operations.md, "Every 5xx and its cause").
 *
 * Static half, generated from the source and the route table: no site answers a 5xx except
 * through a code of SERVER_ERROR_CODES (`serverError`, `notConfigured`, a store gate, the app's
 * error handler); every code, and every 5xx a door declares, is in that list; docs/operations.md
 * lists every code. A new site, door or code is checked the moment it exists.
 *
 * Driven half: the fallbacks (an unexpected fault, an overloaded or reset Durable Object, a full
 * thread queue on the api message door, a switched-off feature, invalid settings) each answer their
 * code, and are logged exactly once, as one `http_5xx` JSON line without the caller's text.
 */
/// <reference types="vite/client" />
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SERVER_ERROR_CODES, describeFailure, platformFailure } from "../../src/platform/http/errors";
import { createRoute, echoKey } from "../helpers/bridge";
import { BASE, admin, call, fetchWithEnv } from "../helpers/http";
import { stubFor } from "../helpers/threads";
import { doors, label } from "./doors";

const SOURCES = import.meta.glob(["../../src/**/*.ts", "../../durable-objects/*.ts"], { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;
const OPERATIONS = Object.values(import.meta.glob("../../docs/operations.md", { query: "?raw", import: "default", eager: true }) as Record<string, string>)[0];

const CODES = SERVER_ERROR_CODES as Record<string, number>;
const ERRORS_MODULE = "../../src/platform/http/errors.ts";

/**
 * Constructions of HttpError whose status is not a literal: each passes on a status that is a 4xx
 * by its type, or re-throws an HttpError keeping its code. A new one must be reviewed and listed.
 */
const PASSED_ON_STATUSES: Record<string, number> = {
  "../../src/extensions/routes.ts": 1, // editCombos: 400 or 404
  "../../src/channels/routes/webhooks.ts": 1, // a refused webhook: 401, 403, 404 or 405
  "../../src/states/refusals.ts": 1, // StateRefusal: 400, 404 or 409
  "../../src/states/binding-save.ts": 2, // re-thrown with its code
  "../../src/backup/section.ts": 2, // re-thrown with its code
  "../../src/web-chat/routes/attachments.ts": 1, // an upload's refusal: 413 or 415
};

/** Responses built by hand with a status passed on from elsewhere. */
const PASSED_ON_RESPONSES: Record<string, number> = {
  "../../src/console/routes.ts": 1, // the ASSETS binding's answer (static files)
  "../../src/sub-mcp/server.ts": 2, // the MCP transport's own 4xx, scrubbed
  "../../src/mcp/client.ts": 1, // an upstream MCP server's answer, read by our client (not a door's)
};

/** Hand-built 5xx answers: the settings gate, the platform 503 and the 500 fallback, all in app.ts, all logged. */
const LITERAL_5XX_ANSWERS: Record<string, number> = { "../../src/app.ts": 3 };

const count = (text: string, re: RegExp) => [...text.matchAll(re)].length;

describe("static: every 5xx site carries a documented code", () => {
  it("the source tree was read", () => {
    expect(Object.keys(SOURCES).length).toBeGreaterThan(100);
    expect(SOURCES[ERRORS_MODULE]).toContain("SERVER_ERROR_CODES");
  });

  it("no HttpError is built with a literal 5xx status outside the error module (use serverError or notConfigured)", () => {
    const offenders = Object.entries(SOURCES)
      .filter(([file, text]) => file !== ERRORS_MODULE && /new HttpError\(\s*5\d\d\b/.test(text))
      .map(([file]) => file);
    expect(offenders).toEqual([]);
  });

  it("every HttpError with a passed-on status is a reviewed one", () => {
    const found: Record<string, number> = {};
    for (const [file, text] of Object.entries(SOURCES)) {
      if (file === ERRORS_MODULE) continue;
      const n = count(text, /new HttpError\(\s*[A-Za-z_]/g);
      if (n) found[file] = n;
    }
    expect(found).toEqual(PASSED_ON_STATUSES);
  });

  it("no door builds a 5xx response by hand, and passed-on statuses are reviewed", () => {
    const literal: Record<string, number> = {};
    const passed: Record<string, number> = {};
    for (const [file, text] of Object.entries(SOURCES)) {
      const l =
        count(text, /(?:c\.(?:json|text|body|newResponse)|Response\.json|new Response)\((?:[^;]|;(?=[^\n]*\)))*?,\s*5\d\d\b/g) +
        count(text, /status:\s*5\d\d\b/g);
      if (l) literal[file] = l;
      const p = count(text, /new Response\([^\n]*status:\s*[a-z][\w.]*\.status\b/g);
      if (p) passed[file] = p;
    }
    expect(literal).toEqual(LITERAL_5XX_ANSWERS);
    expect(passed).toEqual(PASSED_ON_RESPONSES);
  });

  it("every code a site names is in SERVER_ERROR_CODES", () => {
    const named = new Set<string>();
    for (const [file, text] of Object.entries(SOURCES)) {
      if (file === ERRORS_MODULE) continue;
      for (const m of text.matchAll(/serverError\(\s*"([^"]+)"/g)) named.add(m[1]);
      for (const m of text.matchAll(/notConfigured\(\s*"([^"]+)"/g)) named.add(`${m[1]}-not-configured`);
      // The store gates (src/platform/settings/*): their doors answer `<code>-not-configured`.
      for (const m of text.matchAll(/gate:\s*\{\s*code:\s*"([^"]+)"/g)) named.add(`${m[1]}-not-configured`);
    }
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((c) => !(c in CODES))).toEqual([]);
  });

  it("every 5xx a door declares has a documented code of that status", () => {
    const statuses = new Set(Object.values(CODES));
    const missing: string[] = [];
    let declared = 0;
    for (const spec of doors()) {
      for (const s of spec.errors ?? []) {
        if (s < 500) continue;
        declared++;
        if (!statuses.has(s)) missing.push(`${label(spec)}: ${s}`);
      }
    }
    console.log(`five-hundreds: ${doors().length} doors, ${declared} declared 5xx statuses, ${Object.keys(CODES).length} codes`);
    expect(missing).toEqual([]);
  });

  it("docs/operations.md lists every code in its 5xx section", () => {
    expect(OPERATIONS).toBeTruthy();
    const start = OPERATIONS.indexOf("## Every 5xx and its cause");
    expect(start).toBeGreaterThan(-1);
    const next = OPERATIONS.indexOf("\n## ", start + 1);
    const section = OPERATIONS.slice(start, next === -1 ? undefined : next);
    const undocumented = Object.entries(CODES).filter(([code, status]) => !new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${status}\\s*\\|`).test(section));
    expect(undocumented.map(([c]) => c)).toEqual([]);
  });
});

describe("the log line's reason", () => {
  it("keeps an unexpected error's class, message and frames, never a URL, a quoted value or a long run", () => {
    const err = new TypeError(`fetch https://api.example/bot123:TOKENVALUE/send failed on "SECRET user text" near ${"X".repeat(80)}`);
    const reason = describeFailure(err);
    expect(reason).toMatch(/^TypeError: fetch <url> failed on … near …/);
    expect(reason).toContain("(at ");
    for (const s of ["TOKENVALUE", "api.example", "SECRET", "XXXX"]) expect(reason).not.toContain(s);
  });

  it("classifies the runtime's own faults, and nothing else, as platform failures", () => {
    expect(platformFailure(Object.assign(new Error("x"), { overloaded: true }))?.code).toBe("platform_overloaded");
    expect(platformFailure(new Error("D1 DB is overloaded. Too many requests queued."))?.code).toBe("platform_overloaded");
    expect(platformFailure(Object.assign(new Error("x"), { durableObjectReset: true }))?.code).toBe("platform_unavailable");
    expect(platformFailure(new Error("Durable Object storage operation exceeded timeout which caused object to be reset."))?.code).toBe("platform_unavailable");
    expect(platformFailure(new Error("Network connection lost."))?.code).toBe("platform_unavailable");
    expect(platformFailure(Object.assign(new Error("x"), { retryable: true }))?.code).toBe("platform_unavailable");
    expect(platformFailure(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBeNull();
    expect(platformFailure("a string")).toBeNull();
  });
});

/** The console.error lines the next request writes, and the http_5xx ones among them parsed. */
function captureErrors() {
  const raw: string[] = [];
  const spy = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
    raw.push(args.map((a) => (typeof a === "string" ? a : a instanceof Error ? `${a.name}: ${a.message}` : JSON.stringify(a))).join(" "));
  });
  const lines = () => raw.filter((l) => l.startsWith('{"event":"http_5xx"')).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { raw, lines, spy };
}

afterEach(() => vi.restoreAllMocks());

/** Asserts the one log line of a 5xx, and that it is the only error line. */
function expectLoggedOnce(log: ReturnType<typeof captureErrors>, want: { status: number; code: string; route: string }, mustNotContain: string[] = []) {
  expect(log.raw).toHaveLength(1);
  const [line] = log.lines();
  expect(line).toMatchObject({ event: "http_5xx", ...want });
  expect(typeof line.reason).toBe("string");
  expect(Object.keys(line).sort()).toEqual(["code", "event", "reason", "route", "status", ...("error_id" in line ? ["error_id"] : [])].sort());
  for (const s of mustNotContain) expect(log.raw[0]).not.toContain(s);
  return line;
}

const MESSAGE_DOOR = "POST /api/conversations/{route_name}/messages";

async function apiRoute() {
  const k = await echoKey();
  return createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
}

function messageRequest(routeName: string, key: string, text: string): Request {
  return new Request(`${BASE}/api/conversations/${routeName}/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ external_user_id: `u-${crypto.randomUUID()}`, text }),
  });
}

/** A Durable Object namespace whose stubs' `verb` throws `err`; everything else reaches the real object. */
function failingNamespace(ns: DurableObjectNamespace, verb: string, err: Error): DurableObjectNamespace {
  return new Proxy(ns, {
    get(target, prop) {
      if (prop === "get") {
        return (id: DurableObjectId) => {
          const stub = target.get(id);
          return new Proxy(stub, {
            get(s, p) {
              if (p === verb) return () => Promise.reject(err);
              const v = Reflect.get(s, p);
              return typeof v === "function" ? v.bind(s) : v;
            },
          });
        };
      }
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

describe("driven: each fallback answers its code and is logged exactly once", () => {
  it("an unexpected fault: 500 internal_error with an error_id, the detail only in the log", async () => {
    const brokenDb = {
      prepare() {
        throw new Error("SECRET internal detail");
      },
    };
    const log = captureErrors();
    const res = await fetchWithEnv({ ...env, DB: brokenDb }, new Request(`${BASE}/api/auth/me`, { headers: { "x-api-key": "sk-whatever" } }));
    expect(res.status).toBe(500);
    const body = (await res.json()) as Record<string, string>;
    expect(body).toMatchObject({ error: "Internal Server Error", code: "internal_error" });
    expect(JSON.stringify(body)).not.toContain("SECRET");
    const line = expectLoggedOnce(log, { status: 500, code: "internal_error", route: "GET /api/auth/me" }, ["sk-whatever"]);
    expect(line.error_id).toBe(body.error_id);
  });

  it("an overloaded rate-bucket object on the api message door: 503 platform_overloaded with Retry-After", async () => {
    const route = await apiRoute();
    const key = await admin();
    const overloaded = Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), { overloaded: true, retryable: true });
    const log = captureErrors();
    const res = await fetchWithEnv(
      { ...env, ADDRESS_BUCKETS: failingNamespace(env.ADDRESS_BUCKETS, "take", overloaded) },
      messageRequest(route.name, key, "SECRET-TEXT-overloaded"),
    );
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: "temporarily unavailable; retry shortly", code: "platform_overloaded" });
    expect(res.headers.get("retry-after")).toBe("1");
    expectLoggedOnce(log, { status: 503, code: "platform_overloaded", route: MESSAGE_DOOR }, ["SECRET-TEXT", key, route.name]);
  });

  it("a reset thread object on the api message door: 503 platform_unavailable with Retry-After", async () => {
    const route = await apiRoute();
    const key = await admin();
    const reset = Object.assign(new Error("Durable Object reset because its code was updated."), { durableObjectReset: true });
    const log = captureErrors();
    const res = await fetchWithEnv({ ...env, THREADS: failingNamespace(env.THREADS, "accept", reset) }, messageRequest(route.name, key, "SECRET-TEXT-reset"));
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: "platform_unavailable" });
    expect(res.headers.get("retry-after")).toBe("1");
    expectLoggedOnce(log, { status: 503, code: "platform_unavailable", route: MESSAGE_DOOR }, ["SECRET-TEXT", key]);
  });

  it("a lost connection to an object is platform_unavailable too", async () => {
    const route = await apiRoute();
    const log = captureErrors();
    const res = await fetchWithEnv(
      { ...env, THREADS: failingNamespace(env.THREADS, "accept", new Error("Network connection lost.")) },
      messageRequest(route.name, await admin(), "SECRET-TEXT-lost"),
    );
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: "platform_unavailable" });
    expectLoggedOnce(log, { status: 503, code: "platform_unavailable", route: MESSAGE_DOOR }, ["SECRET-TEXT"]);
  });

  it("a full thread queue on the api message door: 503 queue_full with Retry-After, logged with its reason", async () => {
    const route = await apiRoute();
    const key = await admin();
    const external = `q-${crypto.randomUUID()}`;
    const first = await call("POST", `/api/conversations/${route.name}/messages`, {
      key,
      body: { external_user_id: external, text: "seed", wait_seconds: 10 },
    });
    const threadId = first.body.data.thread_id as string;
    // Fill the queue to its depth behind a running turn whose lease is still live.
    const depth = Number((env as unknown as Record<string, unknown>).CONVERSATIONS_THREAD_QUEUE_DEPTH ?? 20);
    await runInDurableObject(stubFor(threadId), (_obj, state) => {
      const rec = state.storage.sql.exec("SELECT record, inbound FROM records LIMIT 1").one() as { record: string; inbound: string };
      for (let i = 0; i <= depth; i++) {
        const id = crypto.randomUUID();
        state.storage.sql.exec(
          "INSERT INTO records (message_id, record, inbound, status, turn_state, turn_lease_until) VALUES (?, ?, ?, 'accepted', ?, ?)",
          id,
          JSON.stringify({ ...JSON.parse(rec.record), message_id: id, status: "accepted" }),
          rec.inbound,
          i === 0 ? "running" : "queued",
          i === 0 ? Date.now() + 3_600_000 : null,
        );
      }
    });
    const log = captureErrors();
    const refused = await call("POST", `/api/conversations/${route.name}/messages`, { key, body: { external_user_id: external, text: "SECRET-TEXT-full" } });
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: "thread queue is full; retry later", code: "queue_full" });
    expect(refused.headers.get("retry-after")).toBe("1");
    const line = expectLoggedOnce(log, { status: 503, code: "queue_full", route: MESSAGE_DOOR }, ["SECRET-TEXT", external, threadId]);
    expect(line.reason).toContain("CONVERSATIONS_THREAD_QUEUE_DEPTH");
  });

  it("a switched-off feature: 501 with its code, logged once", async () => {
    const log = captureErrors();
    const res = await fetchWithEnv(
      { ...env, CONVERSATIONS_STORE_URL: "" },
      new Request(`${BASE}/api/conversations/messages/failed`, { headers: { "x-api-key": await admin() } }),
    );
    expect(res.status).toBe(501);
    expect(await res.json()).toMatchObject({ code: "conversations-not-configured" });
    expectLoggedOnce(log, { status: 501, code: "conversations-not-configured", route: "GET /api/conversations/messages/failed" });
  });

  it("invalid settings: 500 invalid-configuration on every door, logged once per request", async () => {
    const log = captureErrors();
    const res = await fetchWithEnv({ ...env, CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS: "500" }, new Request(`${BASE}/api/health`));
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({ code: "invalid-configuration" });
    const line = expectLoggedOnce(log, { status: 500, code: "invalid-configuration", route: "GET /api/health" });
    expect(line.reason).toContain("CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS");
  });
});
