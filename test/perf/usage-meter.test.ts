/**
 * The usage meter (src/platform/metering/usage-meter.ts) that `npm run bench -- --cost` reads:
 * off, a message leaves no count and the read-out does not exist; on, the same message shows up as
 * a Worker request, object requests and active time, SQLite rows and D1 rows; the read-out needs
 * the token.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { type Usage, switchUsageMeter, takeUsage } from "../../src/platform/metering/usage-meter";
import { echoRoute, send } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";

const TOKEN = "usage-meter-test-token-0123456789abcdef";

function noOutbound() {
  fakeNetwork((req) => {
    throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
  });
}

/** One inline echo turn on a fresh route (so its thread object is made while the meter is as set). */
async function oneTurn(): Promise<void> {
  const r = await echoRoute();
  const res = await send(r.name, { external_user_id: "meter", text: "hello", wait_seconds: 10 });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.data.answer).toBe("hello");
}

const total = (u: Usage) =>
  u.workerRequests +
  u.sqlRowsRead +
  u.sqlRowsWritten +
  u.kvRowsRead +
  u.kvRowsWritten +
  u.alarmsSet +
  u.d1Statements +
  u.d1RowsRead +
  u.d1RowsWritten +
  u.r2ClassA +
  u.r2ClassB +
  Object.values(u.objects).reduce((n, o) => n + o.requests + o.alarms + o.webSocketEvents + o.activeMs, 0);

const readout = (headers: Record<string, string> = {}) =>
  worker.fetch(new Request("https://bridge.test/__usage", { headers }), { ...env, USAGE_METER_TOKEN: TOKEN } as typeof env, createExecutionContext());

describe("the usage meter", () => {
  afterEach(() => switchUsageMeter(false));

  it("counts nothing while off, and has no read-out", async () => {
    noOutbound();
    switchUsageMeter(false);
    await oneTurn();
    const u = takeUsage();
    expect(total(u)).toBe(0);
    expect(u.statements).toEqual({});
    const res = await worker.fetch(new Request("https://bridge.test/__usage"), env, createExecutionContext());
    expect(res.status).toBe(404);
  });

  it("counts a message's requests, object work and rows while on", async () => {
    noOutbound();
    switchUsageMeter(true);
    await oneTurn();
    const u = takeUsage();
    // The route's creation and the message: each is a request into the Worker.
    expect(u.workerRequests).toBeGreaterThanOrEqual(2);
    expect(u.objects.ThreadObject?.requests).toBeGreaterThanOrEqual(1);
    expect(u.objects.AddressBucket?.requests).toBeGreaterThanOrEqual(1);
    expect(u.sqlRowsWritten).toBeGreaterThan(0);
    expect(u.sqlRowsRead).toBeGreaterThan(0);
    // The rows by statement add up to the totals, each named by the class that ran it.
    const byStatement = Object.entries(u.statements);
    expect(byStatement.reduce((n, [, s]) => n + s.rowsWritten, 0)).toBe(u.sqlRowsWritten);
    expect(byStatement.some(([key, s]) => key.startsWith("ThreadObject ") && s.rowsWritten > 0)).toBe(true);
    // Creating the route writes D1.
    expect(u.d1Statements).toBeGreaterThan(0);
    expect(u.d1RowsWritten).toBeGreaterThan(0);
    // Read, the counts start again.
    expect(total(takeUsage())).toBe(0);
  });

  it("answers the read-out only with the token", async () => {
    const refused = await readout();
    expect(refused.status).toBe(401);
    expect(await refused.text()).not.toContain(TOKEN);
    const wrong = await readout({ authorization: "Bearer not-the-token-at-all-0123456789abcdef" });
    expect(wrong.status).toBe(401);
    const ok = await readout({ authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as Usage;
    expect(body).toMatchObject({ workerRequests: expect.any(Number), objects: expect.any(Object) });
  });
});
