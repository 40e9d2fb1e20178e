/**
 * The operator doors end to end on the api door: a real `wrangler dev`,
 * an HTTP tool served by this test, and the HTTPS callback receiver of test/e2e/support trusted
 * through a CA made at test time. An event posted twice yields one turn and one signed callback;
 * the transcript lists the thread's records in order; a forgotten thread reads 404; an operator
 * send answers 200 and is called back afterwards.
 *
 * No assertion is about timing: every wait is a bounded poll for an outcome.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { pollUntil } from "./support/poll";
import { type CallbackReceiver, startReceiver } from "./support/receiver";
import { signatureValid } from "./support/signature";
import { type TestPki, makeTestPki, trustEnv } from "./support/tls";
import { type ToolServer, startToolServer } from "./support/tool-server";

let pki: TestPki;
let rx: CallbackReceiver;
let tool: ToolServer;
let dev: DevServer;
let base: string;
let admin: string;
let caller: string;
let secret: string;
let threadId: string;
let messageId: string;
let eventMessageId: string;

const ROUTE = "ops";
const q = (s: string) => encodeURIComponent(s);
const callbacksFor = (id: string) => rx.requests.filter((r) => JSON.parse(r.rawBody).message_id === id);

async function record(id: string): Promise<any> {
  return (await http(base, "GET", `/api/conversations/${ROUTE}/messages/${id}`, { key: admin })).body.data;
}

beforeAll(async () => {
  pki = makeTestPki();
  rx = await startReceiver(pki);
  // The tool names what it was given, so each callback proves which turn produced it.
  tool = await startToolServer((kwargs) => (kwargs.event ? `event ${kwargs.event.kind} #${kwargs.event.payload.n}` : `message ${kwargs.message}`));
  dev = await startDev({ vars: { CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS: "0.5", CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS: "2" }, env: trustEnv(pki) });
  base = dev.baseUrl;
});

afterAll(async () => {
  await dev?.close();
  await rx?.stop();
  await tool?.stop();
  pki?.cleanup();
});

describe("operator doors end to end (api door)", () => {
  it("sets up an admin, a caller, an HTTP tool and an api route with an HTTPS callback", async () => {
    const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", description: "e2e admin", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(boot.status).toBe(200);
    admin = boot.body.data.token;
    const minted = await http(base, "POST", "/api/auth/api-keys", {
      key: admin,
      body: { user_id: "svc", description: "e2e service", scopes: ["conversations"] },
    });
    expect(minted.status).toBe(200);
    caller = minted.body.data.api_key;
    const declared = await http(base, "POST", "/api/tools-config/entries", {
      key: admin,
      body: { title: "namer", kind: "http", description: "names its turn", url: tool.url, timeout_seconds: 5 },
    });
    expect(declared.status).toBeLessThan(300);
    const created = await http(base, "POST", `/api/conversations/${ROUTE}`, {
      key: admin,
      body: {
        door: "api",
        target_kind: "tool",
        target_name: "namer",
        execution_key: "root",
        callback_url: `${rx.origin}/hooks/ops`,
        turns_per_hour_override: 1000,
      },
    });
    expect(created.status).toBe(200);
    secret = created.body.data.callback_secret;

    // The operator doors are in the API description, and it is still a valid OpenAPI 3.1 document.
    const doc = (await http(base, "GET", "/api/openapi.json")).body;
    for (const p of ["/threads", "/messages/search", "/transcript", "/thread", "/thread/mode", "/thread/messages", "/events"]) {
      expect(doc.paths[`/api/conversations/{route_name}${p}`]).toBeDefined();
    }
    const verdict = await new Validator().validate(doc);
    expect(verdict.errors ?? []).toEqual([]);
  });

  it("a client message opens the thread and is called back", async () => {
    const sent = await http(base, "POST", `/api/conversations/${ROUTE}/messages`, { key: caller, body: { external_user_id: "ada", text: "hello" } });
    expect(sent.status).toBe(202);
    ({ message_id: messageId, thread_id: threadId } = sent.body.data);
    expect(threadId).toBe(`bridge:${ROUTE}:svc/ada`);
    await pollUntil(
      "the message's callback",
      () => callbacksFor(messageId).length,
      (n) => n === 1,
    );
  });

  it("an event posted twice yields one turn and one signed callback", async () => {
    const body = { address: "ada", event: { event_id: "invoice-7", kind: "invoice.paid", payload: { n: 7 } } };
    const first = await http(base, "POST", `/api/conversations/${ROUTE}/events`, { key: caller, body });
    const again = await http(base, "POST", `/api/conversations/${ROUTE}/events`, { key: caller, body });
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(first.body.data).toEqual({ message_id: first.body.data.message_id, thread_id: threadId });
    expect(again.body.data.message_id).toBe(first.body.data.message_id);
    eventMessageId = first.body.data.message_id;

    // Terminal first: a delivered record is never sent again, so the counts below are final.
    await pollUntil(
      "the event's record delivered",
      () => record(eventMessageId),
      (r) => r?.status === "delivered",
      { timeoutMs: 90_000 },
    );
    const got = callbacksFor(eventMessageId);
    expect(got).toHaveLength(1);
    expect(signatureValid(secret, got[0].rawBody, got[0].headers["x-service-signature"])).toBe(true);
    expect(JSON.parse(got[0].rawBody)).toEqual({ message_id: eventMessageId, thread_id: threadId, status: "answered", answer: "event invoice.paid #7" });
    const eventCalls = tool.calls.filter((c) => c.kwargs?.event);
    expect(eventCalls).toHaveLength(1);
    expect(eventCalls[0].kwargs).toEqual({
      message: null,
      sender: null,
      turn: {
        id: eventMessageId,
        inbound: { kind: "event", id: "invoice-7", source: "event:invoice.paid" },
        subject: expect.objectContaining({ thread: threadId, person: null }),
      },
      event: { id: "invoice-7", kind: "invoice.paid", payload: { n: 7 } },
    });
    // A third delivery of the same event, even later, is still the same message.
    const third = await http(base, "POST", `/api/conversations/${ROUTE}/events`, { key: caller, body });
    expect(third.body.data.message_id).toBe(eventMessageId);
    expect(tool.calls.filter((c) => c.kwargs?.event)).toHaveLength(1);
  });

  it("the transcript lists the thread's records in order", async () => {
    const asc = await http(base, "GET", `/api/conversations/${ROUTE}/transcript?thread_id=${q(threadId)}`, { key: admin });
    expect(asc.status).toBe(200);
    expect(asc.body.data).toMatchObject({ total: 2, page: 1, next_page: null, order: "asc", truncated: false });
    expect(asc.body.data.items.map((r: any) => [r.message_id, r.inbound_kind, r.answer])).toEqual([
      [messageId, "message", "message hello"],
      [eventMessageId, "event", "event invoice.paid #7"],
    ]);
    const desc = await http(base, "GET", `/api/conversations/${ROUTE}/transcript?thread_id=${q(threadId)}&order=desc`, { key: caller });
    expect(desc.body.data.items.map((r: any) => r.message_id)).toEqual([eventMessageId, messageId]);
    expect(desc.body.data.items[0]).not.toHaveProperty("attempts"); // caller-safe for a non-admin
    // The listing trails the thread by at most the shards' flush lag (docs/performance.md).
    const listed = await pollUntil(
      "the listing to show the thread's two records",
      () => http(base, "GET", `/api/conversations/${ROUTE}/threads`, { key: admin }),
      // The count and the status flush separately: the second record's acceptance may land before its delivery.
      (r) => r.status !== 200 || r.body.data.items.some((t: any) => t.message_count === 2 && t.last_status === "delivered"),
    );
    expect(listed.body.data.items).toEqual([
      expect.objectContaining({ thread_id: threadId, client_address: "ada", message_count: 2, last_status: "delivered" }),
    ]);
  });

  it("a forgotten thread reads 404", async () => {
    const gone = await http(base, "DELETE", `/api/conversations/${ROUTE}/thread?thread_id=${q(threadId)}`, { key: caller });
    expect(gone).toMatchObject({ status: 200, body: { data: { removed: 2, route_name: ROUTE, thread_id: threadId } } });
    expect((await http(base, "GET", `/api/conversations/${ROUTE}/transcript?thread_id=${q(threadId)}`, { key: admin })).status).toBe(404);
    expect((await http(base, "GET", `/api/conversations/${ROUTE}/messages/${eventMessageId}`, { key: admin })).status).toBe(404);
    expect((await http(base, "GET", `/api/conversations/${ROUTE}/threads`, { key: admin })).body.data.total).toBe(0);
    // The thread is gone, so the event door no longer reaches it.
    const late = await http(base, "POST", `/api/conversations/${ROUTE}/events`, {
      key: caller,
      body: { address: "ada", event: { event_id: "invoice-8", kind: "invoice.paid", payload: { n: 8 } } },
    });
    expect(late.status).toBe(404);
  });

  it("an operator send answers 200, then its signed callback follows", async () => {
    const opThread = `bridge:${ROUTE}:svc/grace`;
    const sent = await http(base, "POST", `/api/conversations/${ROUTE}/thread/messages`, {
      key: caller,
      body: { thread_id: opThread, text: "An operator writes." },
    });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toEqual({ message_id: expect.any(String), thread_id: opThread });
    const id = sent.body.data.message_id;
    await pollUntil(
      "the operator message's callback",
      () => callbacksFor(id).length,
      (n) => n === 1,
    );
    const got = callbacksFor(id)[0];
    expect(signatureValid(secret, got.rawBody, got.headers["x-service-signature"])).toBe(true);
    expect(JSON.parse(got.rawBody)).toEqual({ message_id: id, thread_id: opThread, status: "answered", answer: "An operator writes." });
  });
});
