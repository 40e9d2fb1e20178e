import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readRecord, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { listingCaughtUp } from "../helpers/listing";
import { makeDue, runAlarm, stubFor } from "../helpers/threads";
import { apiToolRoute, threadRow, transcript } from "./helpers";

/** Inserts listing rows straight into D1 (cheap seeding for the scan budgets). */
async function seedThreads(route: string, n: number, row: (i: number) => { status?: string; count?: number; id?: string } = () => ({})) {
  const stmts = [];
  for (let i = 0; i < n; i++) {
    const r = row(i);
    const at = new Date(Date.UTC(2020, 0, 1) + i * 1000).toISOString();
    stmts.push(
      // live_until in the past: seeded threads hold no live record, so search never visits them.
      env.DB.prepare(
        "INSERT INTO threads (route_name, thread_id, client_address, last_activity_at, message_count, last_status, live_until) VALUES (?, ?, ?, ?, ?, ?, 1)",
      ).bind(route, r.id ?? `bridge:${route}:seed-${String(i).padStart(4, "0")}`, `seed-${i}`, at, r.count ?? 1, r.status ?? "delivered"),
    );
  }
  for (let i = 0; i < stmts.length; i += 100) await env.DB.batch(stmts.slice(i, i + 100));
}

async function answered(route: string, user: string, text: string, key?: string) {
  const res = await send(route, { external_user_id: user, text, wait_seconds: 10 }, key);
  expect(res.status).toBe(200);
  return res.body.data as { message_id: string; thread_id: string };
}

describe("thread listing (spec §4.5, decisions §9)", () => {
  it("is admin only, decided before the route lookup", async () => {
    const reader = await mintKey({ scopes: ["conversations"] });
    const r = await apiToolRoute();
    const known = await call("GET", `/api/conversations/${r.name}/threads`, { key: reader.key });
    const unknown = await call("GET", "/api/conversations/no-such-route-x/threads", { key: reader.key });
    expect(known).toMatchObject({ status: 403, body: { error: "Forbidden" } });
    expect(unknown).toMatchObject({ status: 403, body: { error: "Forbidden" } });
    expect((await call("GET", "/api/conversations/no-such-route-x/threads", { key: await admin() })).status).toBe(404);
    expect((await call("GET", `/api/conversations/${r.name}/threads`)).status).toBe(401);
  });

  it("lists newest activity first with the documented item fields and offset paging", async () => {
    const r = await apiToolRoute();
    const a = await answered(r.name, "alice", "one");
    const b = await answered(r.name, "bob", "two");
    await answered(r.name, "alice", "three");
    await listingCaughtUp(a.thread_id, b.thread_id);
    const res = await call("GET", `/api/conversations/${r.name}/threads`, { key: await admin() });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 2, page: 1, page_size: 50, next_page: null, truncated: false });
    expect(res.body.data.items.map((t: any) => t.thread_id)).toEqual([a.thread_id, b.thread_id]);
    expect(res.body.data.items[0]).toEqual({
      thread_id: a.thread_id,
      client_address: "alice",
      last_activity_at: expect.any(String),
      message_count: 2,
      last_status: "delivered",
      rated_down: 0,
    });
    const p1 = await call("GET", `/api/conversations/${r.name}/threads?pageSize=1`, { key: await admin() });
    expect(p1.body.data).toMatchObject({ total: 2, page: 1, page_size: 1, next_page: 2 });
    const p2 = await call("GET", `/api/conversations/${r.name}/threads?pageSize=1&page=2`, { key: await admin() });
    expect(p2.body.data).toMatchObject({ total: 2, page: 2, next_page: null });
    expect(p2.body.data.items[0].thread_id).toBe(b.thread_id);
  });

  it.each([["status=bogus"], ["page=0"], ["page=x"], ["pageSize=0"], ["pageSize=1.5"], ["page=1000001"], ["address="]])("400 for %s", async (qs) => {
    const r = await apiToolRoute();
    const res = await call("GET", `/api/conversations/${r.name}/threads?${qs}`, { key: await admin() });
    expect(res.status).toBe(400);
  });

  it("filters by status and by address substring; person threads never match an address", async () => {
    const r = await apiToolRoute();
    await seedThreads(r.name, 6, (i) => ({ status: i % 2 ? "failed" : "delivered" }));
    await seedThreads(r.name, 1, () => ({ id: `bridge:@person:${crypto.randomUUID()}`, status: "failed" }));
    const failed = await call("GET", `/api/conversations/${r.name}/threads?status=failed`, { key: await admin() });
    expect(failed.body.data).toMatchObject({ total: 4, truncated: false });
    expect(failed.body.data.items.every((t: any) => t.last_status === "failed")).toBe(true);
    const byAddress = await call("GET", `/api/conversations/${r.name}/threads?address=seed-000`, { key: await admin() });
    expect(byAddress.body.data.total).toBe(6);
    const both = await call("GET", `/api/conversations/${r.name}/threads?address=seed-0003&status=failed`, { key: await admin() });
    expect(both.body.data.items.map((t: any) => t.thread_id)).toEqual([`bridge:${r.name}:seed-0003`]);
    // "person" appears in the person thread's id, but person threads never match an address filter.
    const person = await call("GET", `/api/conversations/${r.name}/threads?address=person`, { key: await admin() });
    expect(person.body.data.total).toBe(0);
  });

  it("a filtered listing post-scans at most 500 threads and says truncated; an unfiltered one never does", async () => {
    const r = await apiToolRoute();
    await seedThreads(r.name, 520, (i) => ({ status: i < 10 ? "failed" : "delivered" }));
    const all = await call("GET", `/api/conversations/${r.name}/threads?pageSize=200&page=3`, { key: await admin() });
    expect(all.body.data).toMatchObject({ total: 520, truncated: false, next_page: null });
    expect(all.body.data.items).toHaveLength(120);
    // The ten failed threads are the oldest: 20 of the 520 lie beyond the scan budget.
    const failed = await call("GET", `/api/conversations/${r.name}/threads?status=failed`, { key: await admin() });
    expect(failed.body.data).toMatchObject({ total: 0, items: [], truncated: true });
    const delivered = await call("GET", `/api/conversations/${r.name}/threads?status=delivered&pageSize=200`, { key: await admin() });
    expect(delivered.body.data).toMatchObject({ total: 500, truncated: true, next_page: 2 });
    const small = await apiToolRoute();
    await seedThreads(small.name, 3);
    expect((await call("GET", `/api/conversations/${small.name}/threads?status=delivered`, { key: await admin() })).body.data).toMatchObject({
      total: 3,
      truncated: false,
    });
  });
});

describe("message search (spec §4.5, decisions §9)", () => {
  it("refusals: 403 non-admin (before the route lookup), 400 absent or blank q, 404 unknown route", async () => {
    const reader = await mintKey({ scopes: ["conversations"] });
    const r = await apiToolRoute();
    expect((await call("GET", `/api/conversations/${r.name}/messages/search?q=x`, { key: reader.key })).status).toBe(403);
    expect((await call("GET", "/api/conversations/no-such-route-y/messages/search?q=x", { key: reader.key })).status).toBe(403);
    expect((await call("GET", `/api/conversations/${r.name}/messages/search`, { key: await admin() })).status).toBe(400);
    expect((await call("GET", `/api/conversations/${r.name}/messages/search?q=%20%20`, { key: await admin() })).status).toBe(400);
    expect((await call("GET", `/api/conversations/${r.name}/messages/search?q=x&pageSize=0`, { key: await admin() })).status).toBe(400);
    expect((await call("GET", "/api/conversations/no-such-route-y/messages/search?q=x", { key: await admin() })).status).toBe(404);
  });

  it("finds whole records by inbound text or answer, case-insensitive, newest-active thread first", async () => {
    const r = await apiToolRoute({ reply_expr: '"Reply about " + .' });
    const a = await answered(r.name, "ann", "Blue Whale");
    const b = await answered(r.name, "ben", "nothing here");
    const c = await answered(r.name, "cat", "a blue sky");
    await listingCaughtUp(a.thread_id, b.thread_id, c.thread_id);
    const res = await call("GET", `/api/conversations/${r.name}/messages/search?q=BLUE`, { key: await admin() });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 2, truncated: false, next_page: null });
    expect(res.body.data.items.map((x: any) => x.message_id)).toEqual([c.message_id, a.message_id]);
    expect(res.body.data.items[0]).toHaveProperty("attempts");
    const byAnswer = await call("GET", `/api/conversations/${r.name}/messages/search?q=reply%20about%20a%20blue`, { key: await admin() });
    expect(byAnswer.body.data.items.map((x: any) => x.message_id)).toEqual([c.message_id]);
    const paged = await call("GET", `/api/conversations/${r.name}/messages/search?q=blue&pageSize=1&page=2`, { key: await admin() });
    expect(paged.body.data).toMatchObject({ total: 2, page: 2, next_page: null });
    expect(paged.body.data.items[0].message_id).toBe(a.message_id);
  });

  it("spends at most 1000 records and says truncated", async () => {
    const r = await apiToolRoute();
    const first = await answered(r.name, "bulk", "needle 0");
    // 1100 more records in the same thread, written straight into its object.
    await runInDurableObject(stubFor(first.thread_id), (_obj, state) => {
      const row = state.storage.sql.exec("SELECT record, inbound FROM records LIMIT 1").one() as { record: string; inbound: string };
      for (let i = 1; i <= 1100; i++) {
        const id = crypto.randomUUID();
        const rec = { ...JSON.parse(row.record), message_id: id, inbound_text: `needle ${i}`, answer: `needle ${i}` };
        state.storage.sql.exec(
          "INSERT INTO records (message_id, record, inbound, status, turn_state) VALUES (?, ?, ?, 'delivered', 'done')",
          id,
          JSON.stringify(rec),
          row.inbound,
        );
      }
    });
    await listingCaughtUp(first.thread_id);
    const res = await call("GET", `/api/conversations/${r.name}/messages/search?q=needle&pageSize=200&page=5`, { key: await admin() });
    expect(res.body.data).toMatchObject({ total: 1000, truncated: true, next_page: null });
    expect(res.body.data.items[res.body.data.items.length - 1].inbound_text).toBe("needle 101");
    const none = await call("GET", `/api/conversations/${r.name}/messages/search?q=nothing-matches`, { key: await admin() });
    expect(none.body.data).toMatchObject({ total: 0, truncated: true });
  });

  it("spends at most 500 threads and says truncated", async () => {
    const r = await apiToolRoute();
    await seedThreads(r.name, 501);
    const res = await call("GET", `/api/conversations/${r.name}/messages/search?q=x`, { key: await admin() });
    expect(res.body.data).toMatchObject({ total: 0, items: [], truncated: true });
  });
});

describe("transcript (spec §4.5)", () => {
  it("lists records in order (asc default, desc), paged, with percent-encoded thread ids", async () => {
    const caller = await mintKey({ user_id: `svc:${uniq("t")}`, scopes: ["conversations"] });
    const r = await apiToolRoute();
    const ids = [];
    for (const t of ["first", "second", "third"]) ids.push((await answered(r.name, "u/with space", t, caller.key)).message_id);
    const threadId = `bridge:${r.name}:${caller.user_id.replace(":", "%3A")}/u/with space`;
    const asc = await transcript(r.name, threadId);
    expect(asc.status).toBe(200);
    expect(asc.body.data).toMatchObject({ total: 3, page: 1, page_size: 50, next_page: null, order: "asc", truncated: false });
    expect(asc.body.data.items.map((x: any) => x.message_id)).toEqual(ids);
    expect(Object.keys(asc.body.data)).toEqual(["items", "total", "page", "page_size", "next_page", "order", "truncated"]);
    const desc = await transcript(r.name, threadId, "&order=desc&pageSize=2");
    expect(desc.body.data).toMatchObject({ total: 3, next_page: 2, order: "desc" });
    expect(desc.body.data.items.map((x: any) => x.message_id)).toEqual([ids[2], ids[1]]);
  });

  it("admins read whole records; other readers the caller-safe projection; no read grant is 403", async () => {
    const r = await apiToolRoute();
    const m = await answered(r.name, "u", "hello");
    const reader = await mintKey({ scopes: ["conversations:read"] });
    const full = await transcript(r.name, m.thread_id);
    expect(full.body.data.items[0]).toHaveProperty("attempts");
    const safe = await transcript(r.name, m.thread_id, "", reader.key);
    expect(safe.status).toBe(200);
    expect(safe.body.data.items[0]).toMatchObject({ message_id: m.message_id, origin: "client", inbound_text: "hello" });
    for (const k of ["error", "attempts", "outbound_message_ids", "callback_url", "provider_message_id", "expires_at"])
      expect(safe.body.data.items[0]).not.toHaveProperty(k);
    const outsider = await mintKey({ scopes: ["tools:read"] });
    expect((await transcript(r.name, m.thread_id, "", outsider.key)).status).toBe(403);
  });

  it("refusals: 400 blank thread_id, off-route id, unknown order, bad window; 404 unknown route, unknown thread, person thread", async () => {
    const r = await apiToolRoute();
    const other = await apiToolRoute();
    const m = await answered(r.name, "u", "x");
    const key = await admin();
    expect((await call("GET", `/api/conversations/${r.name}/transcript`, { key })).status).toBe(400);
    expect((await call("GET", `/api/conversations/${r.name}/transcript?thread_id=`, { key })).status).toBe(400);
    expect((await call("GET", `/api/conversations/${r.name}/transcript?thread_id=%20`, { key })).status).toBe(400);
    expect((await transcript(other.name, m.thread_id)).status).toBe(400);
    expect((await transcript(r.name, "not-a-thread")).status).toBe(400);
    expect((await transcript(r.name, m.thread_id, "&order=sideways")).status).toBe(400);
    expect((await transcript(r.name, m.thread_id, "&pageSize=-1")).status).toBe(400);
    expect((await transcript("no-such-route-z", m.thread_id.replace(r.name, "no-such-route-z"))).status).toBe(404);
    expect((await transcript(r.name, `bridge:${r.name}:nobody`)).status).toBe(404);
    expect(await transcript(r.name, `bridge:@person:${crypto.randomUUID()}`)).toMatchObject({ status: 404, body: { error: "person not found on this route" } });
  });

  it("q searches one thread: matches only, an unmatched or unknown thread is an empty page", async () => {
    const r = await apiToolRoute();
    const a = await answered(r.name, "u", "apples");
    await answered(r.name, "u", "pears");
    const hit = await transcript(r.name, a.thread_id, "&q=APPLE");
    expect(hit.body.data).toMatchObject({ total: 1, truncated: false });
    expect(hit.body.data.items[0].message_id).toBe(a.message_id);
    expect((await transcript(r.name, a.thread_id, "&q=plums")).body.data).toMatchObject({ total: 0, items: [] });
    const unknown = await transcript(r.name, `bridge:${r.name}:nobody`, "&q=x");
    expect(unknown).toMatchObject({ status: 200, body: { data: { total: 0, items: [], truncated: false } } });
  });

  it("expired records read as an empty page with the indexed total until the prune pass reclaims the thread; then 404", async () => {
    const r = await apiToolRoute();
    const m = await answered(r.name, "u", "short-lived");
    await answered(r.name, "u", "also short-lived");
    await listingCaughtUp(m.thread_id);
    await makeDue(m.thread_id, "expires_at"); // expired, not yet pruned
    const page = await transcript(r.name, m.thread_id);
    expect(page.body.data).toMatchObject({ items: [], total: 2, next_page: null, truncated: false });
    expect((await threadRow(m.thread_id)).message_count).toBe(2);
    await runAlarm(m.thread_id); // the thread object's prune pass
    await listingCaughtUp(m.thread_id);
    expect(await threadRow(m.thread_id)).toBeNull();
    expect((await transcript(r.name, m.thread_id)).status).toBe(404);
  });
});
