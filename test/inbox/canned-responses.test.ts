/**
 * Canned responses (docs/inbox.md, "Canned responses"): create, replace, read, list (order, prefix,
 * paging), delete; the body rules; the grants (conversations:read lists and renders, only
 * conversations:write writes); the render filling route, customer, operator and thread from a real
 * thread without sending anything, behind the mode doors' thread guard; the 500 cap; 501 without
 * the conversations store.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { echoRoute, send } from "../helpers/bridge";
import { admin, call, expectNotConfigured, mintKey } from "../helpers/http";
import { exported, importDoc } from "../backup/helpers";
import { MAX_CANNED_RESPONSES } from "../../src/inbox/canned-responses";

const C = "/api/inbox/canned-responses";

async function put(shortcode: string, body: unknown, key?: string) {
  return call("PUT", `${C}/${shortcode}`, { key: key ?? (await admin()), body });
}

async function render(shortcode: string, body: unknown, key?: string) {
  return call("POST", `${C}/${shortcode}/render`, { key: key ?? (await admin()), body });
}

/** An api route to echo with one message sent on it: the route's name and the thread's id. */
async function threadWithMessage(externalUserId: string) {
  const route = await echoRoute();
  const sent = await send(route.name, { external_user_id: externalUserId, text: "hello", wait_seconds: 10 });
  expect(sent.body.data).toMatchObject({ status: "answered" });
  return { route: route.name, thread_id: sent.body.data.thread_id as string };
}

describe("create, replace, read, list, delete", () => {
  it("creates with 201, replaces with 200 keeping created_at, and names the writer", async () => {
    const created = await put("refund", { title: "Refund policy", template: "Refunds take {{days}} days." });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      shortcode: "refund",
      title: "Refund policy",
      template: "Refunds take {{days}} days.",
      created_at: expect.any(String),
      updated_at: created.body.data.created_at,
      updated_by: "root",
    });
    const writer = await mintKey({ scopes: ["conversations:write"] });
    const replaced = await put("refund", { title: "Refunds", template: "Refunds take 5 days." }, writer.key);
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({
      shortcode: "refund",
      title: "Refunds",
      template: "Refunds take 5 days.",
      created_at: created.body.data.created_at,
      updated_by: writer.user_id,
    });
    const read = await call("GET", `${C}/refund`, { key: await admin() });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(replaced.body.data);
  });

  it("lists in shortcode order, filters by prefix (`_` is no wildcard) and pages", async () => {
    const key = await admin();
    for (const code of ["list-b", "list-a", "list_c", "listxd", "other"]) expect((await put(code, { title: code, template: "x" })).status).toBe(201);
    const all = await call("GET", `${C}?q=list`, { key });
    expect(all.status).toBe(200);
    expect(all.body.data.items.map((i: any) => i.shortcode)).toEqual(["list-a", "list-b", "list_c", "listxd"]);
    expect(all.body.data).toMatchObject({ total: 4, page: 1, page_size: 50, next_page: null, truncated: false });
    expect((await call("GET", `${C}?q=list_`, { key })).body.data.items.map((i: any) => i.shortcode)).toEqual(["list_c"]);
    const page2 = await call("GET", `${C}?q=list&page=2&pageSize=3`, { key });
    expect(page2.body.data).toMatchObject({ total: 4, page: 2, page_size: 3, next_page: null });
    expect(page2.body.data.items.map((i: any) => i.shortcode)).toEqual(["listxd"]);
    const first = await call("GET", `${C}?pageSize=2`, { key });
    expect(first.body.data.next_page).toBe(2);
    expect(first.body.data.items).toHaveLength(2);
    expect((await call("GET", `${C}?q=LIST`, { key })).status).toBe(400);
  });

  it("deletes with 204 and no body; then 404 on read, delete and render", async () => {
    const key = await admin();
    expect((await put("bye", { title: "Bye", template: "Bye!" })).status).toBe(201);
    const gone = await call("DELETE", `${C}/bye`, { key });
    expect(gone.status).toBe(204);
    expect(gone.body).toBeNull();
    expect((await call("GET", `${C}/bye`, { key })).status).toBe(404);
    expect(await call("DELETE", `${C}/bye`, { key })).toMatchObject({ status: 404, body: { error: "canned response not found" } });
    const t = await threadWithMessage("ann");
    expect((await render("bye", { route_name: t.route, thread_id: t.thread_id })).status).toBe(404);
  });
});

describe("validation", () => {
  it("refuses a bad shortcode, an unknown field, a blank or long title, an empty, long or unparsable template", async () => {
    const ok = { title: "t", template: "x" };
    for (const code of ["Refund", "a.b", "a".repeat(33), "sp%20ace", "%C3%A9"]) {
      const r = await put(code, ok);
      expect(r.status, code).toBe(400);
      expect(r.body.error).toContain("shortcode");
    }
    expect((await put("a".repeat(32), ok)).status).toBe(201);
    const cases: Array<[unknown, string]> = [
      [{ ...ok, extra: 1 }, "extra"],
      [{ title: "t" }, "template"],
      [{ template: "x" }, "title"],
      [{ ...ok, title: "   " }, "title"],
      [{ ...ok, title: "x".repeat(121) }, "title"],
      [{ ...ok, title: "a\u0000b" }, "title"],
      [{ ...ok, template: "" }, "template"],
      [{ ...ok, template: "x".repeat(4097) }, "template"],
      [{ ...ok, template: "{{#open}} never closed" }, "template: does not parse as mustache"],
      [{ ...ok, template: "{{/stray}}" }, "template: does not parse as mustache"],
    ];
    for (const [body, field] of cases) {
      const r = await put("valid", body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.error).toContain(field);
    }
    expect((await call("GET", `${C}/valid`, { key: await admin() })).status).toBe(404);
    expect((await put("valid", { title: "x".repeat(120), template: "x".repeat(4096) })).status).toBe(201);
  });

  it("refuses an unknown field in the render body, and a bad route name or thread id", async () => {
    await put("greet", { title: "Greet", template: "Hi" });
    const t = await threadWithMessage("bob");
    expect((await render("greet", { route_name: t.route, thread_id: t.thread_id, send: true })).status).toBe(400);
    expect((await render("greet", { route_name: "Bad_Route", thread_id: t.thread_id })).status).toBe(400);
    expect((await render("greet", { route_name: t.route })).status).toBe(400);
  });
});

describe("grants", () => {
  it("conversations:read lists, reads and renders but never writes; another tag gets nothing", async () => {
    await put("grant", { title: "Grant", template: "Hello from {{operator.user_id}}" });
    const t = await threadWithMessage("cy");
    const reader = await mintKey({ scopes: ["conversations:read"] });
    expect((await call("GET", C, { key: reader.key })).status).toBe(200);
    expect((await call("GET", `${C}/grant`, { key: reader.key })).status).toBe(200);
    const rendered = await render("grant", { route_name: t.route, thread_id: t.thread_id }, reader.key);
    expect(rendered.status).toBe(200);
    expect(rendered.body.data).toEqual({ text: `Hello from ${reader.user_id}` });
    expect((await put("grant", { title: "Mine now", template: "x" }, reader.key)).status).toBe(403);
    expect((await put("fresh", { title: "Fresh", template: "x" }, reader.key)).status).toBe(403);
    expect((await call("DELETE", `${C}/grant`, { key: reader.key })).status).toBe(403);
    expect((await call("GET", `${C}/grant`, { key: await admin() })).body.data.title).toBe("Grant");
    const other = await mintKey({ scopes: ["tools:write"] });
    expect((await call("GET", C, { key: other.key })).status).toBe(403);
    expect((await render("grant", { route_name: t.route, thread_id: t.thread_id }, other.key)).status).toBe(403);
    expect((await call("GET", C)).status).toBe(401);
  });
});

describe("render", () => {
  it("fills route, customer, operator and thread from a real thread, without escaping and without sending", async () => {
    const t = await threadWithMessage("dana@example.com");
    const template =
      "Hi {{customer.address}} <&>, {{operator.user_id}} here on {{route.name}}{{#route.channel}} via {{route.channel}}{{/route.channel}}{{^route.channel}} (api){{/route.channel}}. Ref {{thread.id}}.{{unknown}}";
    await put("full", { title: "Full", template });
    const before = await call("GET", `/api/conversations/${t.route}/transcript?thread_id=${encodeURIComponent(t.thread_id)}`, { key: await admin() });
    const r = await render("full", { route_name: t.route, thread_id: t.thread_id });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ text: `Hi dana@example.com <&>, root here on ${t.route} (api). Ref ${t.thread_id}.` });
    const after = await call("GET", `/api/conversations/${t.route}/transcript?thread_id=${encodeURIComponent(t.thread_id)}`, { key: await admin() });
    expect(after.body.data.total).toBe(before.body.data.total);
    // Triple braces and `&` mean the same: nothing is escaped either way.
    await put("raw", { title: "Raw", template: "{{{customer.address}}}|{{&customer.address}}" });
    expect((await render("raw", { route_name: t.route, thread_id: t.thread_id })).body.data.text).toBe("dana@example.com|dana@example.com");
  });

  it("renders an empty customer address for a thread of the route with no record yet", async () => {
    const t = await threadWithMessage("erin");
    await put("who", { title: "Who", template: "[{{customer.address}}]{{^customer.address}}nobody yet{{/customer.address}}" });
    const empty = `bridge:${t.route}:${encodeURIComponent("never-seen")}/nobody`;
    const r = await render("who", { route_name: t.route, thread_id: empty });
    expect(r.status).toBe(200);
    expect(r.body.data.text).toBe("[]nobody yet");
  });

  it("applies the mode doors' thread guard: off-route 400, person not on the route 404, unknown route 404", async () => {
    await put("guard", { title: "Guard", template: "x" });
    const a = await threadWithMessage("fay");
    const b = await threadWithMessage("fay");
    // The same answers the mode doors give for the same ids.
    const cases: Array<[string, string, number]> = [
      [a.route, b.thread_id, 400],
      [a.route, "   ", 400],
      [a.route, `bridge:@person:${crypto.randomUUID()}`, 404],
    ];
    for (const [route, thread, status] of cases) {
      expect((await render("guard", { route_name: route, thread_id: thread })).status, thread).toBe(status);
      const mode = await call("GET", `/api/conversations/${route}/thread/mode?thread_id=${encodeURIComponent(thread)}`, { key: await admin() });
      expect(mode.status, `mode door for ${thread}`).toBe(status);
    }
    expect((await render("guard", { route_name: "no-such-route", thread_id: "bridge:no-such-route:x" })).status).toBe(404);
    expect((await render("guard", { route_name: a.route, thread_id: a.thread_id })).status).toBe(200);
  });

  it("refuses a render longer than an operator message may be", async () => {
    const t = await threadWithMessage("gus");
    await put("long", { title: "Long", template: "{{thread.id}}".repeat(315) });
    const r = await render("long", { route_name: t.route, thread_id: `bridge:${t.route}:${"x".repeat(400)}` });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("exceeds");
  });
});

describe("backup", () => {
  it("exports the rows as stored; an import keeps the door's rules and restores a deleted one", async () => {
    await put("bk-hello", { title: "Hello", template: "Hello {{customer.address}}" });
    const doc = await exported(["canned-responses"]);
    const row = doc.sections["canned-responses"].find((r: any) => r.shortcode === "bk-hello");
    expect(row).toEqual({
      shortcode: "bk-hello",
      title: "Hello",
      template: "Hello {{customer.address}}",
      created_at: expect.any(String),
      updated_at: expect.any(String),
      updated_by: "root",
    });
    const withRows = (rows: unknown[]) => ({ ...doc, sections: { "canned-responses": rows } });
    const bad = await importDoc(withRows([row, { ...row, shortcode: "bk-bad", template: "{{#x}}" }]));
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("sections.canned-responses.1");
    expect((await importDoc(withRows([{ ...row, shortcode: "BK" }]))).status).toBe(400);
    expect((await call("DELETE", `${C}/bk-hello`, { key: await admin() })).status).toBe(204);
    expect((await importDoc(withRows([row]))).status).toBe(200);
    expect((await call("GET", `${C}/bk-hello`, { key: await admin() })).body.data).toEqual(row);
    expect((await call("GET", `${C}/bk-bad`, { key: await admin() })).status).toBe(404);
  });
});

describe("the cap and the store gate", () => {
  it(`holds at most ${MAX_CANNED_RESPONSES}: a new one past that is 409, a replace still works`, async () => {
    const key = await admin();
    const have = Number((await env.DB.prepare("SELECT COUNT(*) AS n FROM canned_responses").first<{ n: number }>())?.n ?? 0);
    const now = new Date().toISOString();
    const fill = Array.from({ length: MAX_CANNED_RESPONSES - have }, (_, i) =>
      env.DB.prepare("INSERT INTO canned_responses (shortcode, title, template, created_at, updated_at, updated_by) VALUES (?, ?, 'x', ?, ?, NULL)").bind(
        `zz-fill-${i}`,
        `fill ${i}`,
        now,
        now,
      ),
    );
    await env.DB.batch(fill);
    const full = await put("one-too-many", { title: "No", template: "x" });
    expect(full.status).toBe(409);
    expect(full.body.error).toContain(`at most ${MAX_CANNED_RESPONSES}`);
    expect((await put("zz-fill-0", { title: "Still editable", template: "y" })).status).toBe(200);
    expect((await call("DELETE", `${C}/zz-fill-1`, { key })).status).toBe(204);
    expect((await put("one-too-many", { title: "Now yes", template: "x" })).status).toBe(201);
    await env.DB.prepare("DELETE FROM canned_responses WHERE shortcode LIKE 'zz-fill-%'").run();
  });

  it("answers 501 conversations-not-configured without the conversations store", async () => {
    const body = { title: "t", template: "x" };
    await expectNotConfigured(
      [
        ["GET", C],
        ["GET", `${C}/x`],
        ["PUT", `${C}/x`, body],
        ["DELETE", `${C}/x`],
        ["POST", `${C}/x/render`, { route_name: "r", thread_id: "bridge:r:x" }],
      ],
      await admin(),
      expect,
    );
  });
});
