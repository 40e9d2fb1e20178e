/**
 * The retry suite (docs/security.md, "A retry runs once"), generated from the route table: every
 * door declaring `idempotent` (src/platform/http/route.ts) honours an `Idempotency-Key`, so a
 * caller's retry of a request never does its work twice.
 *
 * 1. Every door declaring `idempotent` is listed, with the figure; every door that declares it
 *    must have a fixture below (the suite fails for one without), and a fixture for a door that no
 *    longer declares it fails too.
 * 2. For each door, from its fixture: a valid request with a key, then the same request with the
 *    same key, answer the same status and body (the second marked `Idempotent-Replayed: true`),
 *    and the effect (a turn's record, an operator's record, a run, a notification) happened once;
 *    the same key on another request is 422 and does nothing; a malformed key is 400 naming the
 *    header and does nothing.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { apiThreadId } from "../../src/shared/thread-id";
import { fakeNetwork } from "../helpers/network";
import { uniq } from "../helpers/http";
import { rawRows } from "../helpers/threads";
import { bootstrapAdmin, callJson, dispatch, doors, label } from "./doors";

const DECLARED = doors().filter((d) => d.idempotent);

/** One door's case: where to send, two different valid bodies, and how many times its effect happened. */
interface Case {
  path: string;
  /** The calling key. */
  key: string;
  /** A valid request body; `variant` 1 is another request than 0. */
  body: (variant: 0 | 1) => unknown;
  /** How many times the door's work was done so far. */
  effects: () => Promise<number>;
}

type Fixture = (admin: string) => Promise<Case>;

async function echoRoute(admin: string): Promise<string> {
  const executor = uniq("exec");
  const key = await callJson("POST", "/api/auth/api-keys", admin, { user_id: executor, description: "retry suite", scopes: ["tool:echo"] });
  expect(key.status, key.text).toBe(200);
  const name = uniq("idem").toLowerCase();
  const r = await callJson("POST", `/api/conversations/${name}`, admin, { door: "api", target_kind: "tool", target_name: "echo", execution_key: executor });
  expect(r.status, r.text).toBe(200);
  return name;
}

/** The records of `threadId` that `match` picks. */
async function recordsWhere(threadId: string, match: (record: Record<string, unknown>) => boolean): Promise<number> {
  return (await rawRows(threadId)).filter((r) => match(JSON.parse(r.record))).length;
}

/** A thread with one message in it (the event and operator doors need an existing thread). */
async function threadWithMessage(admin: string, route: string, address: string): Promise<string> {
  const r = await callJson("POST", `/api/conversations/${route}/messages`, admin, { external_user_id: address, text: "hello" });
  expect(r.status, r.text).toBe(202);
  return r.json.data.thread_id as string;
}

const FIXTURES: Record<string, Fixture> = {
  "POST /api/conversations/{route_name}/messages": async (admin) => {
    const route = await echoRoute(admin);
    const threadId = apiThreadId(route, "root", "retry");
    return {
      path: `/api/conversations/${route}/messages`,
      key: admin,
      body: (v) => ({ external_user_id: "retry", text: `pay order ${v}` }),
      effects: async () => (await rawRows(threadId)).length,
    };
  },
  "POST /api/conversations/{route_name}/events": async (admin) => {
    const route = await echoRoute(admin);
    const threadId = await threadWithMessage(admin, route, "retry");
    return {
      path: `/api/conversations/${route}/events`,
      key: admin,
      body: (v) => ({ address: "retry", event: { event_id: `evt-${v}`, kind: "order.paid", payload: { n: v } } }),
      effects: () => recordsWhere(threadId, (r) => r.inbound_kind === "event"),
    };
  },
  "POST /api/conversations/{route_name}/thread/messages": async (admin) => {
    const route = await echoRoute(admin);
    const threadId = await threadWithMessage(admin, route, "retry");
    return {
      path: `/api/conversations/${route}/thread/messages`,
      key: admin,
      body: (v) => ({ thread_id: threadId, text: `an operator's answer ${v}` }),
      effects: () => recordsWhere(threadId, (r) => r.origin === "operator"),
    };
  },
  "POST /api/tool-runs": async (admin) => {
    const user = uniq("runner");
    const minted = await callJson("POST", "/api/auth/api-keys", admin, { user_id: user, description: "retry suite", scopes: ["tools:read", "tool:echo"] });
    expect(minted.status, minted.text).toBe(200);
    return {
      path: "/api/tool-runs",
      key: minted.json.data.api_key as string,
      body: (v) => ({ tool_name: "echo", arguments: { message: `run ${v}` } }),
      effects: async () => (await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_runs WHERE caller_user_id = ?").bind(user).first<{ n: number }>())?.n ?? 0,
    };
  },
  "POST /api/notifications": async (admin) => {
    const marker = uniq("notice");
    return {
      path: "/api/notifications",
      key: admin,
      body: (v) => ({ message: `${marker} ${v}` }),
      effects: async () => {
        const r = await callJson("GET", "/api/notifications", admin);
        return (r.json.data.notifications as Array<{ message: string }>).filter((n) => n.message.startsWith(marker)).length;
      },
    };
  },
};

async function post(c: Case, idem: string, variant: 0 | 1) {
  return dispatch("POST", c.path, {
    headers: { "x-api-key": c.key, "content-type": "application/json", "idempotency-key": idem },
    body: JSON.stringify(c.body(variant)),
  });
}

let admin: string;
beforeAll(async () => {
  admin = await bootstrapAdmin();
});

describe("retry suite: the declared doors", () => {
  it("lists every door that creates work and honours Idempotency-Key", () => {
    console.log(`retry suite: ${DECLARED.length} idempotent doors, ${Object.keys(FIXTURES).length} fixtures, 4 checks each`);
    expect(DECLARED.length).toBeGreaterThanOrEqual(5);
  });

  it("every declared door has a fixture, and every fixture a declared door", () => {
    const declared = DECLARED.map(label).sort();
    expect(declared.filter((d) => !FIXTURES[d])).toEqual([]);
    expect(Object.keys(FIXTURES).filter((f) => !declared.includes(f))).toEqual([]);
  });
});

describe.each(DECLARED.map((d) => [label(d)]))("retry suite: %s", (door) => {
  it("a retry with the same key answers the first answer and does the work once; another request with the key is 422", async () => {
    fakeNetwork((req) => {
      throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
    });
    const fixture = FIXTURES[door];
    expect(fixture, `no fixture for ${door}`).toBeDefined();
    const c = await fixture(admin);
    const before = await c.effects();
    const key = uniq("retry");

    const first = await post(c, key, 0);
    expect(first.status, first.text).toBeGreaterThanOrEqual(200);
    expect(first.status, first.text).toBeLessThan(300);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(await c.effects()).toBe(before + 1);

    const again = await post(c, key, 0);
    expect(again.status, again.text).toBe(first.status);
    expect(again.json).toEqual(first.json);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await c.effects()).toBe(before + 1);

    const other = await post(c, key, 1);
    expect(other.status, other.text).toBe(422);
    expect(other.json).toMatchObject({ code: "idempotency-key-reused" });
    expect(await c.effects()).toBe(before + 1);

    const bad = await post(c, "not a key", 0);
    expect(bad.status, bad.text).toBe(400);
    expect(bad.json.error).toContain("Idempotency-Key");
    expect(await c.effects()).toBe(before + 1);
  });
});
