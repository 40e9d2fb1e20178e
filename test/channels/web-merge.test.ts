/**
 * Keeping an anonymous conversation after signing in (docs/channels.md, "Keeping an anonymous
 * conversation"): only the visitor's explicit POST, carrying the anonymous session as its
 * credential and the signed-in session in its body, joins the two addresses in one person, the
 * signed-in user's; without it, or with any credential that is not live, nothing is joined.
 */
import { env } from "cloudflare:workers";
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { personDirectoryStub } from "../../src/persons/rpc";
import { createRoute, echoKey } from "../helpers/bridge";
import { admin, call, uniq } from "../helpers/http";
import { ORIGIN, newVisitor, webDesk } from "../helpers/web-visitor";

let networks = 0;
const ip = () => `192.0.2.${(++networks % 250) + 1}`;

async function secretFor(identity: string): Promise<string> {
  const r = await call("PUT", `/api/channels/web/sites/${identity}/verification`, { key: await admin(), body: {} });
  expect(r.status).toBe(200);
  return String(r.body.data.secret);
}

async function session(identity: string, proof: Record<string, unknown> = {}): Promise<string> {
  const r = await call("POST", "/api/channels/web/session", { body: { identity, ...proof }, headers: { origin: ORIGIN, "cf-connecting-ip": ip() } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return String(r.body.data.token);
}

const signedIn = (identity: string, secret: string, user: string) =>
  session(identity, { user_id: user, user_hash: createHmac("sha256", secret).update(user, "utf8").digest("hex") });

const bearer = (token: string, extra: Record<string, string> = {}) => ({ origin: ORIGIN, authorization: `Bearer ${token}`, ...extra });
const say = (identity: string, token: string, text: string) => call("POST", "/api/channels/web/messages", { body: { identity, text }, headers: bearer(token) });
const merge = (identity: string, headers: Record<string, string>, verified_token: string) =>
  call("POST", "/api/channels/web/session/merge", { body: { identity, verified_token }, headers });

const address = (token: string) => token.split(".")[0];

/** The person of a web address on the desk's target (agent echo), or null. */
async function personOf(identity: string, visitor: string): Promise<string | null> {
  const p = await personDirectoryStub(env, "agent", "echo").resolve({ door: "channel", channel: "web", our_identity: identity, address: visitor });
  return p?.person_id ?? null;
}

describe("POST /api/channels/web/session/merge", () => {
  it("with the visitor's consent, joins the anonymous conversation to the signed-in user's person and ends the anonymous session", async () => {
    const desk = await webDesk();
    const secret = await secretFor(desk.identity);
    const anon = await session(desk.identity);
    expect((await say(desk.identity, anon, "before signing in")).status).toBe(200);
    const user = await signedIn(desk.identity, secret, "ada");
    expect((await say(desk.identity, user, "after signing in")).status).toBe(200);
    // Before the visitor's choice, the two conversations are two persons.
    const [a, u] = [await personOf(desk.identity, address(anon)), await personOf(desk.identity, address(user))];
    expect(a).not.toBeNull();
    expect(u).not.toBeNull();
    expect(a).not.toBe(u);
    const r = await merge(desk.identity, bearer(anon), user);
    expect([r.status, r.body.data]).toEqual([200, { merged: true }]);
    expect(r.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    const joined = await personOf(desk.identity, address(user));
    expect(await personOf(desk.identity, address(anon))).toBe(joined);
    // The signed-in person, with both addresses.
    const person = await call("GET", `/api/conversations/persons/${joined}`, { key: await admin() });
    expect(person.body.data.addresses.map((x: { address: string }) => x.address).sort()).toEqual([address(anon), address(user)].sort());
    // The anonymous session is given up; the signed-in one goes on.
    expect((await say(desk.identity, anon, "still anonymous?")).status).toBe(401);
    expect((await say(desk.identity, user, "and now?")).status).toBe(200);
  });

  it("joins a fresh signed-in user too (one who has not written yet), into their own person", async () => {
    const desk = await webDesk();
    const secret = await secretFor(desk.identity);
    const anon = await session(desk.identity);
    expect((await say(desk.identity, anon, "hello")).status).toBe(200);
    const user = await signedIn(desk.identity, secret, "fresh");
    expect((await merge(desk.identity, bearer(anon), user)).status).toBe(200);
    const joined = await personOf(desk.identity, address(user));
    expect(joined).not.toBeNull();
    expect(await personOf(desk.identity, address(anon))).toBe(joined);
  });

  it("refuses every credential that is not the two parties' own, and joins nothing", async () => {
    const desk = await webDesk();
    const secret = await secretFor(desk.identity);
    const anon = await session(desk.identity);
    expect((await say(desk.identity, anon, "hello")).status).toBe(200);
    const user = await signedIn(desk.identity, secret, "grace");
    const other = await webDesk();
    const elsewhere = await signedIn(other.identity, await secretFor(other.identity), "grace");
    const secondAnon = await session(desk.identity);
    const cases: Array<[string, Record<string, string>, string, number, string]> = [
      ["the credential is the signed-in session", bearer(user), user, 400, "merge_needs_anonymous"],
      ["verified_token is an anonymous session", bearer(anon), secondAnon, 400, "invalid_verified_token"],
      ["verified_token is not a token", bearer(anon), "not-a-token", 400, "invalid_verified_token"],
      ["verified_token is forged", bearer(anon), `${address(user)}.${"x".repeat(43)}`, 401, "user_session_missing"],
      ["verified_token is another identity's user", bearer(anon), elsewhere, 401, "user_session_missing"],
      ["no credential", { origin: ORIGIN }, user, 401, "session_missing"],
      ["a forged anonymous credential", bearer(`w_${"A".repeat(22)}.${"B".repeat(43)}`), user, 401, "session_missing"],
      ["another site's page", bearer(anon, { origin: "https://evil.example" }), user, 403, "origin_mismatch"],
    ];
    for (const [why, headers, token, status, code] of cases) {
      const r = await merge(desk.identity, headers, token);
      expect([why, r.status, r.body.code]).toEqual([why, status, code]);
      expect(JSON.stringify(r.body)).not.toContain(token.split(".")[1] ?? token);
    }
    // An unknown field is refused, naming it.
    const extra = await call("POST", "/api/channels/web/session/merge", {
      body: { identity: desk.identity, verified_token: user, person_id: "someone" },
      headers: bearer(anon),
    });
    expect(extra.status).toBe(400);
    expect(await personOf(desk.identity, address(user))).toBeNull();
    expect((await say(desk.identity, anon, "still mine")).status).toBe(200);
  });

  it("a target that keeps no persons answers 409 merge_unavailable and leaves both sessions", async () => {
    const k = await echoKey();
    const identity = uniq("nomerge").replace(/[^A-Za-z0-9_-]/g, "-");
    await createRoute({ door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const secret = await secretFor(identity);
    const anon = await session(identity);
    const user = await signedIn(identity, secret, "ann");
    const r = await merge(identity, bearer(anon), user);
    expect([r.status, r.body.code]).toEqual([409, "merge_unavailable"]);
    expect((await say(identity, anon, "still here")).status).toBe(200);
    expect((await say(identity, user, "me too")).status).toBe(200);
  });

  it("the chat page's cookie session may be the anonymous party too; its cookie is cleared", async () => {
    const desk = await webDesk();
    const secret = await secretFor(desk.identity);
    const page = await newVisitor(desk);
    const user = await signedIn(desk.identity, secret, "page-user");
    const r = await merge(desk.identity, { origin: ORIGIN, cookie: page.cookie }, user);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get("set-cookie")).toMatch(/Max-Age=0/);
    expect(await personOf(desk.identity, page.address)).toBe(await personOf(desk.identity, address(user)));
  });
});
