/**
 * Web chat attachments (docs/channels.md, "Attachments"): a visitor's upload behind the session,
 * the identity's caps, the type its bytes are, the network's quota, who may read an upload back,
 * how a message carries it to the target, and that it dies with the conversation.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRoute } from "../helpers/bridge";
import { BASE, admin, call, dispatch, mintKey, readResult, uniq } from "../helpers/http";
import { eventually, runAlarm, stubFor } from "../helpers/threads";
import { fakeNetwork } from "../helpers/network";
import { type Visitor, newVisitor, openStream, setSettings, unsetSettings } from "../helpers/web-visitor";
import { attachmentKey } from "../../src/conversations/model/web";

const ORIGIN = new URL(BASE).origin;
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 1, 2, 3, 4]);
const PDF = new TextEncoder().encode("%PDF-1.4\n%\u00e2\u00e3\n1 0 obj\n<<>>\nendobj\n");
const HTML = new TextEncoder().encode("<!doctype html><script>alert(1)</script>");

let ip = 0;
/** A fresh client network per test, so one test's quota is not another's. */
const network = () => `198.51.${100 + (++ip % 100)}.${(Date.now() % 250) + 1}`;

/** A web route on an http agent at a fake host, which records what each turn's run received. */
async function desk() {
  const host = `${uniq("att")
    .replace(/[^a-z0-9-]/gi, "-")
    .toLowerCase()}.example`;
  const title = host.split(".")[0];
  const declared = await call("POST", "/api/agents-config/entries", {
    key: await admin(),
    body: { title, kind: "http", description: "records attachments", config: { url: `https://${host}/run` } },
  });
  expect(declared.status, JSON.stringify(declared.body)).toBe(200);
  const key = await mintKey({ scopes: [`agent:${title}`] });
  const identity = uniq("att").replace(/[^A-Za-z0-9_-]/g, "-");
  const route = await createRoute({
    door: "channel",
    channel: "web",
    our_identity: identity,
    target_kind: "agent",
    target_name: title,
    execution_key: key.user_id,
  });
  const runs: any[] = [];
  fakeNetwork(async (req, body) => {
    if (new URL(req.url).host !== host) return new Response("unexpected host", { status: 599 });
    runs.push(JSON.parse(body));
    return Response.json({ text: "got it" });
  });
  return { identity, route: route.name, runs, desk: { identity, web: route.name } };
}

function upload(
  identity: string,
  v: Visitor | null,
  bytes: Uint8Array,
  opts: { type?: string; name?: string; net?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { origin: ORIGIN, "cf-connecting-ip": opts.net ?? network(), ...(opts.headers ?? {}) };
  if (v) headers.cookie = v.cookie;
  if (opts.type) headers["content-type"] = opts.type;
  if (opts.name) headers["x-filename"] = encodeURIComponent(opts.name);
  return dispatch(`${BASE}/api/channels/web/attachments?identity=${identity}`, { method: "POST", headers, body: bytes }).then(readResult);
}

function read(identity: string, v: Visitor, id: string, headers: Record<string, string> = {}) {
  return dispatch(`${BASE}/api/channels/web/attachments/${id}?identity=${identity}`, { headers: { cookie: v.cookie, ...headers } });
}

const send = (identity: string, v: Visitor, body: Record<string, unknown>) =>
  call("POST", "/api/channels/web/messages", { body: { identity, ...body }, headers: { origin: ORIGIN, cookie: v.cookie } });

/** Every object the bucket holds, by key. */
async function bucketKeys(): Promise<string[]> {
  const listed = await env.WEB_ATTACHMENTS.list({ prefix: "web/" });
  return listed.objects.map((o) => o.key);
}

const rows = (home: string) =>
  runInDurableObject(stubFor(home), (_o, state) => state.storage.sql.exec("SELECT * FROM web_attachments").toArray()) as Promise<any[]>;

const policy = (identity: string, body: Record<string, unknown>) => call("PUT", `/api/channels/web/sites/${identity}/attachments`, { key: null, body });

describe("an upload", () => {
  it("is stored behind the session, sent with a message, reaches the agent as a reference it resolves, and shows on the page", async () => {
    const d = await desk();
    const v = await newVisitor(d.desk);
    const up = await upload(d.identity, v, PNG, { type: "image/png", name: "cat photo.png" });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const a = up.body.data;
    expect(a).toEqual({
      attachment_id: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      kind: "image",
      content_type: "image/png",
      bytes: PNG.length,
      filename: "cat photo.png",
    });
    expect(await bucketKeys()).toContain(attachmentKey(a.attachment_id));

    const sent = await send(d.identity, v, { text: "", attachments: [a.attachment_id] });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await eventually(
      async () => d.runs.length,
      (n) => n > 0,
    );
    const ref = `web-attachment:${d.route}/${a.attachment_id}`;
    expect(d.runs[0].input.attachments).toEqual([{ kind: "image", url: ref, filename: "cat photo.png" }]);

    // The target resolves the reference with a key that may read the route's conversations.
    const got = await dispatch(`${BASE}/api/conversations/${d.route}/attachments/${a.attachment_id}`, { headers: { "x-api-key": await admin() } });
    expect(got.status).toBe(200);
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(PNG);
    expect(got.headers.get("content-type")).toBe("image/png");
    expect(got.headers.get("x-content-type-options")).toBe("nosniff");
    expect(got.headers.get("content-disposition")).toMatch(/^attachment; filename="cat photo\.png"; filename\*=UTF-8''cat%20photo\.png$/);
    const reader = await mintKey({ scopes: ["tools:read"] });
    const refused = await dispatch(`${BASE}/api/conversations/${d.route}/attachments/${a.attachment_id}`, { headers: { "x-api-key": reader.key } });
    expect(refused.status).toBe(403);
    const elsewhere = await dispatch(`${BASE}/api/conversations/fx-other-${Date.now()}/attachments/${a.attachment_id}`, {
      headers: { "x-api-key": await admin() },
    });
    expect(elsewhere.status).toBe(404);

    // The page shows it: the visitor's entry names it, and the visitor's own session reads it back inline.
    const s = await openStream(d.desk, v);
    s.ws?.close();
    const entry = s.frames.find((f) => f.type === "entry" && f.entry.role === "visitor")?.entry;
    expect(entry.part).toEqual({ attachments: [{ attachment_id: a.attachment_id, kind: "image", filename: "cat photo.png" }] });
    const mine = await read(d.identity, v, a.attachment_id, { "sec-fetch-site": "same-origin" });
    expect(mine.status).toBe(200);
    expect(mine.headers.get("content-disposition")).toMatch(/^inline;/);
    expect(mine.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    expect(new Uint8Array(await mine.arrayBuffer())).toEqual(PNG);
  });

  it("is read back only by the session that owns it, and only another site's request is refused", async () => {
    const d = await desk();
    const v = await newVisitor(d.desk);
    const other = await newVisitor(d.desk);
    const a = (await upload(d.identity, v, PDF, { type: "application/pdf", name: "invoice" })).body.data;
    expect(a.filename).toBe("invoice.pdf");
    const pdf = await read(d.identity, v, a.attachment_id);
    expect(pdf.status).toBe(200);
    expect(pdf.headers.get("content-disposition")).toMatch(/^attachment;/);
    await pdf.body?.cancel();
    const theirs = await read(d.identity, other, a.attachment_id);
    expect([theirs.status, (await readResult(theirs)).body.code]).toEqual([404, "unknown_attachment"]);
    const cross = await read(d.identity, v, a.attachment_id, { "sec-fetch-site": "cross-site" });
    expect([cross.status, (await readResult(cross)).body.code]).toEqual([403, "origin_mismatch"]);
    const anon = await dispatch(`${BASE}/api/channels/web/attachments/${a.attachment_id}?identity=${d.identity}`);
    expect(anon.status).toBe(401);
    await anon.body?.cancel();
    // Another visitor cannot send it either.
    const stolen = await send(d.identity, other, { text: "mine now", attachments: [a.attachment_id] });
    expect([stolen.status, stolen.body.code, stolen.body.error]).toEqual([400, "unknown_attachment", expect.stringContaining("attachments.0")]);
  });

  it("needs the session and the Origin before anything is read", async () => {
    const d = await desk();
    const v = await newVisitor(d.desk);
    const before = await bucketKeys();
    const noOrigin = await dispatch(`${BASE}/api/channels/web/attachments?identity=${d.identity}`, {
      method: "POST",
      headers: { cookie: v.cookie },
      body: PNG,
    });
    expect(noOrigin.status).toBe(403);
    await noOrigin.body?.cancel();
    const foreign = await upload(d.identity, v, PNG, { headers: { origin: "https://evil.example" } });
    expect([foreign.status, foreign.body.code]).toEqual([403, "origin_mismatch"]);
    const noSession = await upload(d.identity, null, PNG);
    expect([noSession.status, noSession.body.code]).toEqual([401, "session_missing"]);
    expect(await bucketKeys()).toEqual(before);
  });

  it("from the widget: a bearer from an allowed origin, answered with CORS; the preflight admits GET", async () => {
    const d = await desk();
    const host = "https://shop.example.com";
    expect((await call("PUT", `/api/channels/web/sites/${d.identity}`, { key: await admin(), body: { allowed_origins: [host] } })).status).toBe(200);
    const minted = await call("POST", "/api/channels/web/session", { body: { identity: d.identity }, headers: { origin: host } });
    const token = minted.body.data.token as string;
    const up = await dispatch(`${BASE}/api/channels/web/attachments?identity=${d.identity}`, {
      method: "POST",
      headers: { origin: host, authorization: `Bearer ${token}`, "content-type": "image/png", "cf-connecting-ip": network() },
      body: PNG,
    });
    expect(up.status).toBe(201);
    expect(up.headers.get("access-control-allow-origin")).toBe(host);
    const id = (await up.json<any>()).data.attachment_id;
    const pre = await dispatch(`${BASE}/api/channels/web/attachments/${id}?identity=${d.identity}`, { method: "OPTIONS", headers: { origin: host } });
    expect([pre.status, pre.headers.get("access-control-allow-methods")]).toEqual([204, "GET"]);
    const got = await dispatch(`${BASE}/api/channels/web/attachments/${id}?identity=${d.identity}`, {
      headers: { origin: host, authorization: `Bearer ${token}` },
    });
    expect([got.status, got.headers.get("access-control-allow-origin")]).toEqual([200, host]);
    await got.body?.cancel();
    const elsewhere = await dispatch(`${BASE}/api/channels/web/attachments/${id}?identity=${d.identity}`, {
      headers: { origin: "https://evil.example", authorization: `Bearer ${token}` },
    });
    expect(elsewhere.status).toBe(403);
    await elsewhere.body?.cancel();
  });
});

describe("the caps", () => {
  it("refuse an upload over the identity's size, of a disguised or unsupported type, or of a type not allowed, storing nothing", async () => {
    const d = await desk();
    const v = await newVisitor(d.desk);
    const set = await call("PUT", `/api/channels/web/sites/${d.identity}/attachments`, { key: await admin(), body: { max_bytes: 64 } });
    expect(set.body.data).toEqual({
      identity: d.identity,
      enabled: true,
      max_bytes: 64,
      allowed_types: ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"],
    });
    const before = await bucketKeys();
    const big = await upload(d.identity, v, new Uint8Array(65).fill(0x41), { type: "text/plain" });
    expect([big.status, big.body.code, big.body.error]).toEqual([413, "attachment_too_large", "an upload is limited to 64 bytes on this chat"]);
    const html = await upload(d.identity, v, HTML, { type: "image/png", name: "cat.png" });
    expect([html.status, html.body.code]).toEqual([415, "disguised_type"]);
    const renamed = await upload(d.identity, v, PNG, { type: "image/png", name: "page.html" });
    expect([renamed.status, renamed.body.code]).toEqual([415, "disguised_type"]);
    const claimed = await upload(d.identity, v, PNG, { type: "text/html" });
    expect([claimed.status, claimed.body.code]).toEqual([415, "disguised_type"]);
    const binary = await upload(d.identity, v, new Uint8Array([0, 1, 2, 3, 0xfe, 0xff]));
    expect([binary.status, binary.body.code]).toEqual([415, "unsupported_type"]);
    const text = await upload(d.identity, v, new TextEncoder().encode("plain words"), { type: "text/plain", name: "notes.txt" });
    expect([text.status, text.body.code, text.body.error]).toEqual([415, "type_not_allowed", expect.stringContaining("image/png")]);
    expect(await bucketKeys()).toEqual(before);
    expect(await rows(v.home)).toEqual([]);

    await call("PUT", `/api/channels/web/sites/${d.identity}/attachments`, { key: await admin(), body: { allowed_types: ["text/plain"] } });
    const ok = await upload(d.identity, v, new TextEncoder().encode("plain words"), { name: "notes" });
    expect([ok.status, ok.body.data?.content_type, ok.body.data?.filename]).toEqual([201, "text/plain; charset=utf-8", "notes.txt"]);
    await call("PUT", `/api/channels/web/sites/${d.identity}/attachments`, { key: await admin(), body: { enabled: false } });
    const off = await upload(d.identity, v, new TextEncoder().encode("plain words"));
    expect([off.status, off.body.code]).toEqual([403, "attachments_disabled"]);
  });

  it("count every upload of a network, across identities, in a rate bucket (429 too_many_uploads)", async () => {
    await setSettings({ CHANNEL_WEB_UPLOADS_PER_HOUR: "2" });
    try {
      const d = await desk();
      const v = await newVisitor(d.desk);
      const net = network();
      const codes: Array<number | string> = [];
      for (let i = 0; i < 3; i++) {
        const r = await upload(d.identity, v, PNG, { type: "image/png", net });
        codes.push(r.status === 429 ? r.body.code : r.status);
        if (r.status === 429) expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
      }
      expect(codes).toEqual([201, 201, "too_many_uploads"]);
      // Another network keeps its own budget.
      expect((await upload(d.identity, v, PNG, { type: "image/png" })).status).toBe(201);
    } finally {
      await unsetSettings(["CHANNEL_WEB_UPLOADS_PER_HOUR"]);
    }
  });

  it("the policy door: defaults, partial writes, refusals naming the field", async () => {
    const identity = uniq("pol").replace(/[^A-Za-z0-9_-]/g, "-");
    const key = await admin();
    const read = await call("GET", `/api/channels/web/sites/${identity}/attachments`, { key });
    expect(read.body.data).toEqual({
      identity,
      enabled: true,
      max_bytes: 5242880,
      allowed_types: ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"],
    });
    const bad = await call("PUT", `/api/channels/web/sites/${identity}/attachments`, { key, body: { max_bytes: 26214401 } });
    expect([bad.status, bad.body.error]).toEqual([400, expect.stringContaining("max_bytes")]);
    const unknownType = await call("PUT", `/api/channels/web/sites/${identity}/attachments`, { key, body: { allowed_types: ["image/svg+xml"] } });
    expect([unknownType.status, unknownType.body.error]).toEqual([400, expect.stringContaining("allowed_types.0")]);
    expect(JSON.stringify(unknownType.body)).not.toContain("svg");
    const extra = await call("PUT", `/api/channels/web/sites/${identity}/attachments`, { key, body: { enabled: true, colour: "red" } });
    expect(extra.status).toBe(400);
    expect((await call("GET", `/api/channels/web/sites/${identity}/attachments`, { key })).body.data.max_bytes).toBe(5242880);
    const put = await call("PUT", `/api/channels/web/sites/${identity}/attachments`, { key, body: { allowed_types: ["image/png", "image/png"] } });
    expect(put.body.data).toEqual({ identity, enabled: true, max_bytes: 5242880, allowed_types: ["image/png"] });
    // The origins door keeps the policy, and the policy door keeps the origins.
    await call("PUT", `/api/channels/web/sites/${identity}`, { key, body: { allowed_origins: ["https://a.example.com"] } });
    expect((await call("GET", `/api/channels/web/sites/${identity}/attachments`, { key })).body.data.allowed_types).toEqual(["image/png"]);
    expect((await call("GET", `/api/channels/web/sites/${identity}`, { key })).body.data.allowed_origins).toEqual(["https://a.example.com"]);
    expect((await policy(identity, { enabled: false })).status).toBe(401);
  });
});

describe("the lifetime", () => {
  it("forgetting the visitor's thread deletes the upload: the bucket, the row and every door", async () => {
    const d = await desk();
    const v = await newVisitor(d.desk);
    const sentUp = (await upload(d.identity, v, PNG, { type: "image/png" })).body.data.attachment_id;
    const unsent = (await upload(d.identity, v, PNG, { type: "image/png" })).body.data.attachment_id;
    expect((await send(d.identity, v, { text: "see", attachments: [sentUp] })).status).toBe(200);
    await eventually(
      async () => d.runs.length,
      (n) => n > 0,
    );
    expect((await rows(v.home)).map((r) => [r.id, r.message_id !== null])).toEqual(
      expect.arrayContaining([
        [sentUp, true],
        [unsent, false],
      ]),
    );
    const key = await admin();
    const forgot = await eventually(
      () => call("DELETE", `/api/conversations/${d.route}/thread?thread_id=${encodeURIComponent(v.home)}`, { key }),
      (r) => r.status !== 409,
    );
    expect(forgot.status).toBe(200);
    const keys = await bucketKeys();
    expect(keys).not.toContain(attachmentKey(sentUp));
    expect(keys).not.toContain(attachmentKey(unsent));
    expect(await rows(v.home)).toEqual([]);
    const op = await dispatch(`${BASE}/api/conversations/${d.route}/attachments/${sentUp}`, { headers: { "x-api-key": key } });
    expect(op.status).toBe(404);
    await op.body?.cancel();
  });

  it("an upload no message carried goes when its hour is up; a sent one when its record's retention ends", async () => {
    const d = await desk();
    const v = await newVisitor(d.desk);
    const id = (await upload(d.identity, v, PNG, { type: "image/png" })).body.data.attachment_id;
    const row = (await rows(v.home))[0];
    expect(row.expires_at - row.at).toBe(3_600_000);
    await runInDurableObject(stubFor(v.home), (_o, state) => {
      state.storage.sql.exec("UPDATE web_attachments SET expires_at = ?", Date.now() - 1);
    });
    const gone = await read(d.identity, v, id);
    expect(gone.status).toBe(404);
    await gone.body?.cancel();
    await runAlarm(v.home);
    await eventually(
      () => bucketKeys(),
      (keys) => !keys.includes(attachmentKey(id)),
    );
    expect(await rows(v.home)).toEqual([]);

    const kept = (await upload(d.identity, v, PNG, { type: "image/png" })).body.data.attachment_id;
    const said = await send(d.identity, v, { text: "keep this", attachments: [kept] });
    const messageId = said.body.data.message_id as string;
    const bound = await eventually(
      () => rows(v.home),
      (r) => r.length === 1 && r[0].message_id === messageId,
    );
    // Bound, it expires with the visitor's entry of that record, moved with the record's own expiry.
    const entry = await runInDurableObject(stubFor(v.home), (_o, state) =>
      state.storage.sql.exec("SELECT expires_at FROM web_transcript WHERE message_id = ? AND role = 'visitor'", messageId).toArray(),
    );
    expect(bound[0].expires_at).toBe(entry[0].expires_at);
    await (stubFor(v.home) as any).webExpire(messageId, Date.now() - 1);
    // The object's own alarm is due at once and may be the one that runs the pass.
    await runAlarm(v.home);
    await eventually(
      () => bucketKeys(),
      (keys) => !keys.includes(attachmentKey(kept)),
    );
    expect(await rows(v.home)).toEqual([]);
  });
});
