/**
 * The pre-chat form (docs/channels.md, "Pre-chat form"): the operator's doors, the form the page
 * and the config door hand the visitor, the answers checked against it before anything is kept,
 * the visitor's profile on the turn, the record and a multichannel target's person, the verified
 * visitor's vouched name and email, and the profile's end with the person.
 */
import { runInDurableObject } from "cloudflare:test";
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createRoute } from "../helpers/bridge";
import { D1Counter, countedFetch } from "../helpers/d1-count";
import { admin, call, dispatch, BASE, mintKey, uniq } from "../helpers/http";
import { eventually, rawRows, stubFor } from "../helpers/threads";
import { declareTool, network } from "../operator/helpers";
import { readRecord } from "../helpers/bridge";
import { ORIGIN, settled, transcriptRows } from "../helpers/web-visitor";
import { mergeProfiles } from "../../src/shared/visitor-profile";

const prechatPath = (identity: string) => `/api/channels/web/sites/${identity}/prechat`;

const FORM = {
  fields: [
    { name: "name", label: "Your name", type: "text", required: true },
    { name: "email", label: "Email", type: "email", required: true },
    { name: "topic", label: "Topic", type: "enum", options: ["Billing", "Orders"], required: true },
    { name: "order_no", label: "Order number", type: "number" },
    { name: "newsletter", label: "Send me news", type: "boolean" },
  ],
};

/** A web route to an HTTP tool whose payload_expr passes the message and the profile; `runs` holds what the tool saw. */
async function desk(opts: { multichannel?: boolean; form?: unknown } = {}) {
  const host = `prechat-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const runs: any[] = [];
  network({ [host]: (kwargs) => (runs.push(kwargs), `tool saw ${kwargs.message}`) });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const identity = uniq("pre").replace(/[^A-Za-z0-9_-]/g, "-");
  const web = await createRoute({
    door: "channel",
    channel: "web",
    our_identity: identity,
    target_kind: "tool",
    target_name: title,
    execution_key: k.user_id,
    payload_expr: "{message: .message, profile: (.profile // null), person_id: (.person_id // null)}",
  });
  if (opts.multichannel) {
    const put = await call("PUT", `/api/conversation-configs/tool/${title}`, {
      key: await admin(),
      body: { target_kind: "tool", target_name: title, multichannel: true },
    });
    expect(put.status).toBe(200);
  }
  if (opts.form !== null) {
    const put = await call("PUT", prechatPath(identity), { key: await admin(), body: opts.form ?? FORM });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  }
  return { identity, web: web.name, title, runs };
}

/** A network of its own per call, so the per-network session cap never interferes. */
const freshIp = () => `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

/** Opens the chat page as a navigation; answers the cookie and the visitor's own thread. */
async function page(d: { identity: string; web: string }) {
  const res = await dispatch(`${BASE}/api/channels/web/chat/${d.identity}`, { headers: { "sec-fetch-mode": "navigate", "cf-connecting-ip": freshIp() } });
  expect(res.status).toBe(200);
  await res.text();
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
  const address = cookie.split("=")[1].split(".")[0];
  return { cookie, address, home: `bridge:${d.web}:${address}` };
}

const post = (path: string, body: Record<string, unknown>, headers: Record<string, string>) =>
  call("POST", `/api/channels/web/${path}`, { body, headers: { origin: ORIGIN, ...headers } });

const profileRows = (home: string) => runInDurableObject(stubFor(home), (_o, state) => state.storage.sql.exec("SELECT * FROM web_profile").toArray());

describe("the pre-chat form's doors", () => {
  it("GET answers none, PUT sets the form with its defaults, DELETE removes it", async () => {
    const identity = uniq("pre");
    const key = await admin();
    expect((await call("GET", prechatPath(identity), { key })).body.data).toEqual({ identity, fields: null });
    const put = await call("PUT", prechatPath(identity), { key, body: FORM });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.data.fields[3]).toEqual({ name: "order_no", label: "Order number", type: "number", required: false });
    expect((await call("GET", prechatPath(identity), { key })).body.data).toEqual(put.body.data);
    // The site's other settings are untouched by the form, and the form by them.
    expect((await call("PUT", `/api/channels/web/sites/${identity}`, { key, body: { allowed_origins: ["https://shop.example"] } })).status).toBe(200);
    expect((await call("GET", prechatPath(identity), { key })).body.data.fields).toHaveLength(5);
    expect((await call("DELETE", prechatPath(identity), { key })).body.data).toEqual({ identity, fields: null });
    expect((await call("GET", prechatPath(identity), { key })).body.data.fields).toBeNull();
    expect((await call("GET", `/api/channels/web/sites/${identity}`, { key })).body.data.allowed_origins).toEqual(["https://shop.example"]);
  });

  it("refuses a malformed form naming the field by index, never echoing it, and keeps the old one", async () => {
    const identity = uniq("pre");
    const key = await admin();
    expect((await call("PUT", prechatPath(identity), { key, body: FORM })).status).toBe(200);
    const field = (extra: Record<string, unknown>) => ({ name: "secretname", label: "L", type: "text", ...extra });
    const cases: Array<[unknown, string]> = [
      [{ fields: [field({}), field({})] }, "fields.1.name"],
      [{ fields: [field({ type: "enum" })] }, "fields.0.options"],
      [{ fields: [field({ options: ["a"] })] }, "fields.0.options"],
      [{ fields: [field({ type: "email", max_length: 10 })] }, "fields.0.max_length"],
      [{ fields: [field({ type: "enum", options: ["a", "a"] })] }, "fields.0.options"],
      [{ fields: [field({ type: "date" })] }, "fields.0.type"],
      [{ fields: [field({ name: "Secret Name" })] }, "fields.0.name"],
      [{ fields: [field({ label: "   " })] }, "fields.0.label"],
      [{ fields: [field({ colour: "red" })] }, "fields.0"],
      [{ fields: [] }, "fields"],
      [{ fields: Array.from({ length: 11 }, (_, i) => field({ name: `f${i}` })) }, "fields"],
      [{ fields: [field({})], intro: "hi" }, "body"],
    ];
    for (const [body, where] of cases) {
      const r = await call("PUT", prechatPath(identity), { key, body });
      expect([JSON.stringify(body), r.status]).toEqual([JSON.stringify(body), 400]);
      expect(r.body.error).toContain(where === "body" ? "invalid body" : `${where}`);
      expect(r.body.error).not.toContain("secretname");
    }
    expect((await call("GET", prechatPath(identity), { key })).body.data.fields).toEqual(
      (await call("PUT", prechatPath(identity), { key, body: FORM })).body.data.fields,
    );
  });

  it("reads with channels:read and writes with channels:write", async () => {
    const identity = uniq("pre");
    const reader = await mintKey({ scopes: ["channels:read"] });
    const writer = await mintKey({ scopes: ["channels:read", "channels:write"] });
    expect((await call("GET", prechatPath(identity), { key: reader.key })).status).toBe(200);
    expect((await call("PUT", prechatPath(identity), { key: reader.key, body: FORM })).status).toBe(403);
    expect((await call("DELETE", prechatPath(identity), { key: reader.key })).status).toBe(403);
    expect((await call("PUT", prechatPath(identity), { key: writer.key, body: FORM })).status).toBe(200);
    expect((await call("DELETE", prechatPath(identity), { key: writer.key })).status).toBe(200);
  });
});

describe("the visitor's form", () => {
  it("the config door answers it as a form schema, beside the hours; none without a form", async () => {
    const d = await desk();
    const v = await page(d);
    const config = await post("config", { identity: d.identity }, { cookie: v.cookie });
    expect(config.status).toBe(200);
    expect(config.body.data.open_now).toBe(true);
    const schema = config.body.data.prechat;
    expect(schema.required).toEqual(["name", "email", "topic"]);
    expect(schema.properties.email).toEqual({ type: "string", title: "Email", format: "email" });
    expect(schema.properties.topic.enum).toEqual(["Billing", "Orders"]);
    expect(schema.properties.newsletter.type).toBe("boolean");
    expect(schema.properties.name).toEqual({ type: "string", title: "Your name", maxLength: 200 });

    const none = await desk({ form: null });
    const w = await page(none);
    expect((await post("config", { identity: none.identity }, { cookie: w.cookie })).body.data.prechat).toBeNull();
  });
});

describe("the answers", () => {
  const good = { name: "Ada Lovelace", email: "ada@example.com", topic: "Billing", order_no: 42, newsletter: true };

  it("arrive with the first turn as the visitor's profile, stay on the record and ride on every later turn", async () => {
    const d = await desk();
    const v = await page(d);
    const first = await post("messages", { identity: d.identity, text: "", profile: good }, { cookie: v.cookie });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    await settled(v.home);
    const profile = { fields: good, verified: [] };
    const text = "Your name: Ada Lovelace\nEmail: ada@example.com\nTopic: Billing\nOrder number: 42\nSend me news: true";
    expect(d.runs[0]).toEqual({ message: text, profile, person_id: null });
    // The record keeps it; the visitor's page shows the answers as their first message.
    const rec = await readRecord(d.web, first.body.data.message_id);
    expect(rec.body.data.inbound_profile).toEqual(profile);
    expect(rec.body.data.inbound_text).toBe(text);
    expect((await transcriptRows(v.home))[0].text).toBe(text);
    // A later message carries it too, as link params do.
    expect((await post("messages", { identity: d.identity, text: "where is my order?" }, { cookie: v.cookie })).status).toBe(200);
    await eventually(
      async () => d.runs,
      (r) => r.length === 2,
    );
    expect(d.runs[1]).toEqual({ message: "where is my order?", profile, person_id: null });
  });

  it("are checked against the form: a refusal names the field, never the answer, and keeps nothing", async () => {
    const d = await desk();
    const v = await page(d);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...good, email: "SECRETVALUE" }, "profile.email: must be an email address"],
      [{ ...good, order_no: "SECRETVALUE" }, "profile.order_no: must be a number"],
      [{ ...good, newsletter: "SECRETVALUE" }, "profile.newsletter: must be true or false"],
      [{ ...good, topic: "SECRETVALUE" }, "profile.topic: must be one of the field's options"],
      [{ ...good, name: "   " }, "profile.name: is required"],
      [{ email: good.email, topic: good.topic }, "profile.name: is required"],
      [{ ...good, SECRETVALUE: "x" }, "profile: names a field the pre-chat form does not have"],
      [{ ...good, name: "x".repeat(201) }, "profile.name: must be at most 200 characters"],
      [{ ...good, nested: { a: 1 } }, "profile: each answer must be a text"],
    ];
    for (const [profile, message] of cases) {
      const r = await post("messages", { identity: d.identity, text: "", profile }, { cookie: v.cookie });
      expect([message, r.status]).toEqual([message, 400]);
      expect(r.body.error).toContain(message);
      expect(JSON.stringify(r.body)).not.toContain("SECRETVALUE");
    }
    expect(await profileRows(v.home)).toEqual([]);
    expect(await rawRows(v.home)).toEqual([]);
    expect(d.runs).toEqual([]);
    // A field named like an Object.prototype member is required like any other.
    const odd = await desk({ form: { fields: [{ name: "constructor", label: "Build", type: "text", required: true }] } });
    const o = await page(odd);
    const missing = await post("messages", { identity: odd.identity, text: "", profile: {} }, { cookie: o.cookie });
    expect([missing.status, missing.body.error]).toEqual([400, "invalid body: profile.constructor: is required"]);
    // An identity without a form takes no answers.
    const none = await desk({ form: null });
    const w = await page(none);
    const r = await post("messages", { identity: none.identity, text: "hi", profile: { name: "Ada" } }, { cookie: w.cookie });
    expect([r.status, r.body.code]).toEqual([400, "invalid_profile"]);
  });

  it("make no D1 statement on the message path", async () => {
    const d = await desk();
    const v = await page(d);
    // The identity's route and site are cached by the first message (and the page's read).
    expect((await post("messages", { identity: d.identity, text: "warm" }, { cookie: v.cookie })).status).toBe(200);
    const counter = new D1Counter();
    const res = await countedFetch(counter, "POST", "/api/channels/web/messages", {
      headers: { "content-type": "application/json", origin: ORIGIN, cookie: v.cookie },
      body: JSON.stringify({ identity: d.identity, text: "", profile: good }),
    });
    expect(res.status, res.text).toBe(200);
    expect(counter.summary().worker.statements).toBe(0);
  });
});

const b64url = (text: string) => Buffer.from(text, "utf8").toString("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
function userToken(secret: string, claims: Record<string, unknown>): string {
  const signing = `${b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${b64url(JSON.stringify(claims))}`;
  const signature = createHmac("sha256", secret).update(signing, "utf8").digest("base64");
  return `${signing}.${signature.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

describe("a verified visitor", () => {
  it("skips the fields the site vouches for; the vouched name and email reach the turn marked verified", async () => {
    const d = await desk();
    const minted = await call("PUT", `/api/channels/web/sites/${d.identity}/verification`, { key: await admin(), body: {} });
    const secret: string = minted.body.data.secret;
    const now = Math.floor(Date.now() / 1000);
    const session = await post(
      "session",
      { identity: d.identity, user_token: userToken(secret, { sub: "member-7", iat: now, exp: now + 600, name: "Ada L.", email: "ada@site.example" }) },
      { "cf-connecting-ip": freshIp() },
    );
    expect(session.status).toBe(200);
    const bearer = { authorization: `Bearer ${session.body.data.token}` };
    const config = await post("config", { identity: d.identity }, bearer);
    expect(Object.keys(config.body.data.prechat.properties)).toEqual(["topic", "order_no", "newsletter"]);
    expect(config.body.data.prechat.required).toEqual(["topic"]);
    // A vouched field is not the visitor's to answer.
    const vouched = await post("messages", { identity: d.identity, text: "", profile: { topic: "Orders", name: "Bob" } }, bearer);
    expect([vouched.status, vouched.body.error]).toEqual([400, "invalid body: profile.name: the site already vouches for this field"]);
    const ok = await post("messages", { identity: d.identity, text: "", profile: { topic: "Orders" } }, bearer);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    await eventually(
      async () => d.runs,
      (r) => r.length === 1,
    );
    expect(d.runs[0].profile).toEqual({ fields: { topic: "Orders", name: "Ada L.", email: "ada@site.example" }, verified: ["name", "email"] });
    expect(d.runs[0].message).toBe("Topic: Orders");
  });

  it("a token's claims are what the page's messages carry until the next token; a hash proof changes nothing", async () => {
    const d = await desk({ form: null });
    const minted = await call("PUT", `/api/channels/web/sites/${d.identity}/verification`, { key: await admin(), body: {} });
    const secret: string = minted.body.data.secret;
    const now = Math.floor(Date.now() / 1000);
    const open = (proof: Record<string, unknown>) => post("session", { identity: d.identity, ...proof }, { "cf-connecting-ip": freshIp() });
    const say = (token: string, text: string) => post("messages", { identity: d.identity, text }, { authorization: `Bearer ${token}` });
    const a = await open({ user_token: userToken(secret, { sub: "m8", iat: now, exp: now + 600, email: "m8@site.example" }) });
    expect((await say(a.body.data.token, "one")).status).toBe(200);
    const hash = createHmac("sha256", secret).update("m8", "utf8").digest("hex");
    const b = await open({ user_id: "m8", user_hash: hash });
    expect((await say(b.body.data.token, "two")).status).toBe(200);
    const c = await open({ user_token: userToken(secret, { sub: "m8", iat: now, exp: now + 600 }) });
    expect((await say(c.body.data.token, "three")).status).toBe(200);
    await eventually(
      async () => d.runs,
      (r) => r.length === 3,
    );
    expect(d.runs.map((r) => r.profile)).toEqual([
      { fields: { email: "m8@site.example" }, verified: ["email"] },
      { fields: { email: "m8@site.example" }, verified: ["email"] },
      null,
    ]);
  });
});

describe("the profile's lifetime", () => {
  it("survives the replacement of a live session (another device), not a session that ended", async () => {
    const d = await desk();
    const secret: string = (await call("PUT", `/api/channels/web/sites/${d.identity}/verification`, { key: await admin(), body: {} })).body.data.secret;
    const now = Math.floor(Date.now() / 1000);
    const open = async () => {
      const r = await post(
        "session",
        { identity: d.identity, user_token: userToken(secret, { sub: "m9", iat: now, exp: now + 600 }) },
        { "cf-connecting-ip": freshIp() },
      );
      expect(r.status).toBe(200);
      return { authorization: `Bearer ${r.body.data.token}`, home: `bridge:${d.web}:${r.body.data.token.split(".")[0]}` };
    };
    const laptop = await open();
    const answers = { name: "Max", email: "max@example.com", topic: "Orders" };
    expect((await post("messages", { identity: d.identity, text: "", profile: answers }, laptop)).status).toBe(200);
    const phone = await open();
    expect((await post("messages", { identity: d.identity, text: "from the phone" }, phone)).status).toBe(200);
    await runInDurableObject(stubFor(phone.home), (_o, state) => state.storage.sql.exec("UPDATE web_session SET expires_at = 1"));
    const later = await open();
    expect((await post("messages", { identity: d.identity, text: "weeks later" }, later)).status).toBe(200);
    await eventually(
      async () => d.runs,
      (r) => r.length === 3,
    );
    expect(d.runs.map((r) => r.profile)).toEqual([{ fields: answers, verified: [] }, { fields: answers, verified: [] }, null]);
  });
});

describe("the person's profile", () => {
  it("is kept on a multichannel target's person, shown by its door, and erased with it", async () => {
    const d = await desk({ multichannel: true });
    const v = await page(d);
    const said = await post(
      "messages",
      { identity: d.identity, text: "", profile: { name: "Grace", email: "grace@example.com", topic: "Orders" } },
      { cookie: v.cookie },
    );
    expect(said.status).toBe(200);
    await settled(v.home);
    const personId = d.runs[0].person_id as string;
    expect(personId).toBeTruthy();
    const key = await admin();
    const person = await call("GET", `/api/conversations/persons/${personId}`, { key });
    expect(person.body.data.profile).toMatchObject({ fields: { name: "Grace", email: "grace@example.com", topic: "Orders" }, verified: [] });
    expect(person.body.data.profile.updated_at).toEqual(expect.any(String));
    expect((await profileRows(v.home)).length).toBe(1);

    const erased = await call("DELETE", `/api/conversations/persons/${personId}`, { key });
    expect(erased.status).toBe(200);
    expect((await call("GET", `/api/conversations/persons/${personId}`, { key })).status).toBe(404);
    // The visitor's own thread: the session and the profile kept with it end too.
    expect(await profileRows(v.home)).toEqual([]);
    const rec = await readRecord(d.web, said.body.data.message_id);
    expect(rec.status).toBe(404);
  });

  it("folds profiles field by field, newest first, marking only vouched values verified", () => {
    const older = { fields: { name: "Ada L.", email: "a@site.example", topic: "Billing" }, verified: ["name" as const, "email" as const] };
    const newer = { fields: { name: "Ada", topic: "Orders" }, verified: [] };
    expect(mergeProfiles(older, newer)).toEqual({ fields: { name: "Ada", email: "a@site.example", topic: "Orders" }, verified: ["email"] });
    expect(mergeProfiles(null, newer)).toEqual(newer);
    expect(mergeProfiles(newer, older)).toEqual({ fields: { name: "Ada L.", topic: "Billing", email: "a@site.example" }, verified: ["name", "email"] });
  });
});
