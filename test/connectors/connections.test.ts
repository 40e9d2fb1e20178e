/**
 * The connection doors (docs/connectors.md "Connections"): start (authorization URL,
 * state, PKCE), OAuth completion against a fake token endpoint at the network edge, bad, expired,
 * replayed and foreign states, list/get/PATCH/reconnect/delete with ownership, the 501 without a
 * store and 400s naming the field.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/access-control/crypto";
import { codeChallengeS256 } from "../../src/connectors/pkce";
import { MAX_OPEN_STARTS, openVerifier, pruneStarts } from "../../src/connectors/starts";
import { answerOnly, fakeNetwork } from "../helpers/network";
import { admin } from "../helpers/http";
import {
  AUTHORIZE_URL,
  CLIENT_ID,
  CLIENT_SECRET,
  REDIRECT_URI,
  TOKEN_URL,
  VARS,
  call,
  connect,
  connectorsUser,
  expectNoSecrets,
  fakeProvider,
  ring,
  startRow,
  storedRows,
} from "./helpers";
import { must } from "../../src/platform/must";

const START = "/api/connectors/connections/start";
const COMPLETE = "/api/connectors/oauth/complete";
const MARKER = "PLANTED_VALUE_7c1";

async function start(key: string, body: unknown = { provider_id: "acme", sub_services: ["mail"] }, vars = VARS) {
  return call("POST", START, { key, body }, vars);
}

describe("POST /api/connectors/connections/start", () => {
  it("answers the provider's authorization URL with state and an S256 challenge of a verifier kept server-side", async () => {
    const key = await admin();
    const before = Date.now();
    const r = await start(key, { provider_id: "acme", sub_services: ["calendar", "files"] });
    expect(r.status, r.text).toBe(200);
    const a = r.body.data;
    expect(Object.keys(a).sort()).toEqual(["authorization_url", "connection_id", "expires_at", "provider_id", "purpose", "state", "sub_services"]);
    expect(a).toMatchObject({ purpose: "connect", provider_id: "acme", sub_services: ["calendar", "files"], connection_id: null });
    expect(a.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const url = new URL(a.authorization_url);
    expect(`${url.origin}${url.pathname}`).toBe(AUTHORIZE_URL);
    const q = Object.fromEntries(url.searchParams);
    // The sub-services' scopes, first appearance first, each once; the descriptor's extra parameter kept.
    expect(q).toEqual({
      prompt: "consent",
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      scope: "cal.read cal.write files mail.read",
      state: a.state,
      code_challenge: q.code_challenge,
      code_challenge_method: "S256",
    });
    expect(q.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Expires after CONNECTORS_OAUTH_START_TTL_SECONDS (600 by default).
    const expires = Date.parse(a.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 600_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 600_000);

    // Stored: only the state's SHA-256, and the verifier sealed; the challenge is S256 of that verifier.
    const row = await startRow(a.state);
    expect(row).not.toBeNull();
    expect(must(row, "row").state_hash).toBe(await sha256Hex(a.state));
    expect(JSON.stringify(row)).not.toContain(a.state);
    const verifier = await openVerifier(await ring(), {
      state_hash: String(must(row, "row").state_hash),
      sealed_verifier: JSON.parse(String(must(row, "row").sealed_verifier)),
    } as any);
    expect(verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await codeChallengeS256(must(verifier, "verifier"))).toBe(q.code_challenge);
    expect(String(must(row, "row").sealed_verifier)).not.toContain(must(verifier, "verifier"));
    // The verifier is never shown.
    expect(r.text).not.toContain(must(verifier, "verifier"));
  });

  it("mints a fresh state and verifier each time", async () => {
    const key = await admin();
    const a = (await start(key)).body.data;
    const b = (await start(key)).body.data;
    expect(a.state).not.toBe(b.state);
    expect(new URL(a.authorization_url).searchParams.get("code_challenge")).not.toBe(new URL(b.authorization_url).searchParams.get("code_challenge"));
  });

  it.each([
    ["an unknown provider", { provider_id: "nope", sub_services: ["mail"] }, "provider_id"],
    ["a provider id off the pattern", { provider_id: `Bad-${MARKER}`, sub_services: ["mail"] }, "provider_id"],
    ["an unknown sub-service", { provider_id: "acme", sub_services: ["mail", `x${MARKER.toLowerCase()}`] }, "sub_services.1"],
    ["no sub-service", { provider_id: "acme", sub_services: [] }, "sub_services"],
    ["a repeated sub-service", { provider_id: "acme", sub_services: ["mail", "mail"] }, "sub_services"],
    ["a missing provider_id", { sub_services: ["mail"] }, "provider_id"],
    ["an unknown field", { provider_id: "acme", sub_services: ["mail"], colour: MARKER }, "colour"],
    ["a provider without OAuth", { provider_id: "plain", sub_services: ["all"] }, "provider_id"],
  ])("refuses %s with a 400 naming the field, never the value", async (_what, body, field) => {
    const r = await start(await admin(), body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toContain(field);
    expect(r.text).not.toContain(MARKER);
  });

  it("answers 501 connector-provider-not-configured naming the env var when the client credentials are unset", async () => {
    const key = await admin();
    for (const name of ["ACME_CLIENT_ID", "ACME_CLIENT_SECRET"]) {
      const r = await start(key, undefined, { ...VARS, [name]: "" });
      expect(r.status).toBe(501);
      expect(r.body).toEqual({ error: `connector provider not configured (set ${name})`, code: "connector-provider-not-configured", env_var: name });
    }
  });

  it("refuses a token endpoint the outbound guard refuses before the user consents", async () => {
    const providers = JSON.parse(String(VARS.CONNECTORS_PROVIDERS));
    providers[0].oauth.token_endpoint = "https://10.0.0.7/token";
    const r = await start(await admin(), undefined, { ...VARS, CONNECTORS_PROVIDERS: JSON.stringify(providers) });
    expect(r.status).toBe(501);
    expect(r.body.code).toBe("connector-provider-not-configured");
    expect(r.text).not.toContain("10.0.0.7");
  });
});

describe("POST /api/connectors/oauth/complete", () => {
  it("exchanges the code with the verifier and the client's credentials, and answers the connection", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const started = await start(key, { provider_id: "acme", sub_services: ["mail", "calendar"] });
    const { code, state } = fake.consent(started.body.data.authorization_url);
    const done = await call("POST", COMPLETE, { key, body: { state, code } });
    expect(done.status, done.text).toBe(200);
    expect(Object.keys(done.body.data).sort()).toEqual(["connection", "kind"]);
    expect(done.body.data.kind).toBe("connected");
    const conn = done.body.data.connection;
    expect(conn.connection_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(conn).toMatchObject({
      provider_id: "acme",
      owner_user_id: "root",
      sub_services: ["mail", "calendar"],
      scopes: ["mail.read", "cal.read", "cal.write"],
    });
    expect(conn.health).toMatchObject({ status: "connected", refreshable: true, last_error: null, last_refreshed_at: null, granted_scope: "granted" });
    expect(Date.parse(conn.health.access_token_expires_at)).toBeGreaterThan(Date.now() + 3000_000);
    expect(Object.keys(conn).sort()).toEqual(["connection_id", "created_at", "health", "owner_user_id", "provider_id", "scopes", "sub_services", "updated_at"]);
    expectNoSecrets(done.text, fake);

    // One token request: the code, the redirect URI of the authorization, the verifier (checked by
    // the fake against the challenge), the client authenticated with HTTP Basic.
    expect(fake.tokenCalls).toHaveLength(1);
    const t = fake.tokenCalls[0];
    expect(t.grant_type).toBe("authorization_code");
    expect(t.params.get("code")).toBe(code);
    expect(t.params.get("redirect_uri")).toBe(REDIRECT_URI);
    expect(t.params.get("code_verifier")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(t.params.get("client_secret")).toBeNull();
    expect(fake.edge[0].url).toBe(TOKEN_URL);
    // The start is used up.
    expect(await startRow(state)).toBeNull();
  });

  it("authenticates the client in the body when the descriptor says client_secret_post", async () => {
    const providers = JSON.parse(String(VARS.CONNECTORS_PROVIDERS));
    providers[0].oauth.client_auth = "client_secret_post";
    const vars = { ...VARS, CONNECTORS_PROVIDERS: JSON.stringify(providers) };
    const seen: URLSearchParams[] = [];
    fakeNetwork(
      answerOnly({
        [`POST ${TOKEN_URL}`]: (req, body) => {
          expect(req.headers.get("authorization")).toBeNull();
          seen.push(new URLSearchParams(body));
          return Response.json({ access_token: "at-post", token_type: "Bearer" });
        },
      }),
    );
    const key = await admin();
    const s = await start(key, undefined, vars);
    const done = await call("POST", COMPLETE, { key, body: { state: s.body.data.state, code: "c1" } }, vars);
    expect(done.status, done.text).toBe(200);
    expect(seen[0].get("client_id")).toBe(CLIENT_ID);
    expect(seen[0].get("client_secret")).toBe(CLIENT_SECRET);
    // No expiry and no refresh token: connected, not refreshable, never expiring.
    expect(done.body.data.connection.health).toMatchObject({ status: "connected", refreshable: false, access_token_expires_at: null });
    expect(done.text).not.toContain("at-post");
  });

  it("refuses an unknown, replayed or expired state with one 400", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const unknown = await call("POST", COMPLETE, { key, body: { state: `s-${MARKER}`, code: "c" } });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ error: "invalid body: state: unknown, expired or already used", code: "oauth-state-invalid" });

    const { started, done } = await connect(fake, { key });
    expect(done.status).toBe(200);
    const replay = await call("POST", COMPLETE, {
      key,
      body: { state: new URL(started.body.data.authorization_url).searchParams.get("state"), code: "another" },
    });
    expect(replay.status).toBe(400);
    expect(replay.body.code).toBe("oauth-state-invalid");

    const s = await start(key);
    const { code, state } = fake.consent(s.body.data.authorization_url);
    await env.DB.prepare("UPDATE connector_oauth_starts SET expires_at = ? WHERE state_hash = ?")
      .bind(Date.now() - 1, await sha256Hex(state))
      .run();
    const expired = await call("POST", COMPLETE, { key, body: { state, code } });
    expect(expired.status).toBe(400);
    expect(expired.body.code).toBe("oauth-state-invalid");
    // The expired start is gone too: a second try finds nothing either.
    expect(await startRow(state)).toBeNull();
    // Only the one successful exchange reached the provider.
    expect(fake.tokenCalls).toHaveLength(1);
  });

  it("refuses another caller's state without using it up; the initiator still completes", async () => {
    const fake = fakeProvider();
    const alice = await connectorsUser();
    const bob = await connectorsUser();
    const s = await start(alice.key);
    const { code, state } = fake.consent(s.body.data.authorization_url);
    const stolen = await call("POST", COMPLETE, { key: bob.key, body: { state, code } });
    expect(stolen.status).toBe(400);
    expect(stolen.body.code).toBe("oauth-state-invalid");
    expect(fake.tokenCalls).toHaveLength(0);
    const done = await call("POST", COMPLETE, { key: alice.key, body: { state, code } });
    expect(done.status, done.text).toBe(200);
    expect(done.body.data.connection.owner_user_id).toBe(alice.user_id);
  });

  it("a refused or failed exchange is a 400 naming the status and OAuth error code, never the provider's text or a secret", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const count = async () => (await call("GET", "/api/connectors/connections", { key })).body.data.total as number;
    const before = await count();
    fake.next.code = { fail: { status: 400, error: "invalid_grant" } };
    const s = await start(key);
    const { code, state } = fake.consent(s.body.data.authorization_url);
    const r = await call("POST", COMPLETE, { key, body: { state, code } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: "the code could not be exchanged: token endpoint answered HTTP 400 (invalid_grant)", code: "oauth-exchange-failed" });
    expect(r.text).not.toContain(CLIENT_SECRET);
    expect(r.text).not.toContain(code);
    // No connection was made.
    expect(await count()).toBe(before);
  });

  it("an unreachable token endpoint or an answer without an access token is a 400 too", async () => {
    const key = await admin();
    const answers: Array<() => Response> = [
      () => {
        throw new Error("connection refused");
      },
      () => Response.json({ token_type: "Bearer" }),
      () => new Response("<html>", { status: 200, headers: { "content-type": "text/html" } }),
      () => Response.json({ error: "server_error" }, { status: 503 }),
    ];
    const messages: string[] = [];
    for (const answer of answers) {
      fakeNetwork(answerOnly({ [`POST ${TOKEN_URL}`]: () => answer() }));
      const s = await start(key);
      const r = await call("POST", COMPLETE, { key, body: { state: s.body.data.state, code: "c" } });
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe("oauth-exchange-failed");
      messages.push(r.body.error);
    }
    expect(messages).toEqual([
      "the code could not be exchanged: token endpoint could not be reached",
      "the code could not be exchanged: token endpoint answered without a usable access_token",
      "the code could not be exchanged: token endpoint answered a body that is neither JSON nor a form",
      "the code could not be exchanged: token endpoint answered HTTP 503 (server_error)",
    ]);
  });

  it.each([
    ["a missing code", { state: "s" }, "code"],
    ["an empty state", { state: "", code: "c" }, "state"],
    ["a non-string code", { state: "s", code: 7 }, "code"],
    ["an unknown field", { state: "s", code: "c", extra: MARKER }, "extra"],
  ])("refuses %s with a 400 naming the field", async (_what, body, field) => {
    const r = await call("POST", COMPLETE, { key: await admin(), body });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(field);
    expect(r.text).not.toContain(MARKER);
  });
});

describe("reading connections", () => {
  it("a non-admin sees only its own connections; an admin sees all; another's reads as absent", async () => {
    const fake = fakeProvider();
    const alice = await connectorsUser();
    const bob = await connectorsUser();
    const a = await connect(fake, { key: alice.key });
    const b = await connect(fake, { key: bob.key, sub_services: ["calendar"] });

    const aliceList = await call("GET", "/api/connectors/connections", { key: alice.key });
    expect(aliceList.status).toBe(200);
    expect(aliceList.body.data.items.map((i: any) => i.connection_id)).toEqual([a.id]);
    expect(aliceList.body.data.total).toBe(1);
    expectNoSecrets(aliceList.text, fake);

    const adminList = await call("GET", "/api/connectors/connections", { key: await admin() });
    const ids = adminList.body.data.items.map((i: any) => i.connection_id);
    expect(ids).toEqual(expect.arrayContaining([a.id, b.id]));
    expectNoSecrets(adminList.text, fake);
    const byOwner = await call("GET", `/api/connectors/connections?owner_user_id=${bob.user_id}`, { key: await admin() });
    expect(byOwner.body.data.items.map((i: any) => i.connection_id)).toEqual([b.id]);
    // A non-admin's owner filter cannot widen what it sees.
    const peek = await call("GET", `/api/connectors/connections?owner_user_id=${bob.user_id}`, { key: alice.key });
    expect(peek.body.data).toEqual({ items: [], total: 0 });

    const own = await call("GET", `/api/connectors/connections/${a.id}`, { key: alice.key });
    expect(own.status).toBe(200);
    expect(own.body.data).toMatchObject({ connection_id: a.id, owner_user_id: alice.user_id, sub_services: ["mail"], health: { status: "connected" } });
    expectNoSecrets(own.text, fake);
    const foreign = await call("GET", `/api/connectors/connections/${b.id}`, { key: alice.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: "connection not found" });
    const absent = await call("GET", `/api/connectors/connections/${crypto.randomUUID()}`, { key: alice.key });
    expect(absent.body).toEqual(foreign.body);
    expect((await call("GET", `/api/connectors/connections/${b.id}`, { key: await admin() })).status).toBe(200);

    // Another's connection cannot be changed, reconnected or deleted either.
    expect((await call("PATCH", `/api/connectors/connections/${b.id}/sub-services`, { key: alice.key, body: { sub_services: ["calendar"] } })).status).toBe(
      404,
    );
    expect((await call("POST", `/api/connectors/connections/${b.id}/reconnect`, { key: alice.key })).status).toBe(404);
    expect((await call("DELETE", `/api/connectors/connections/${b.id}`, { key: alice.key })).status).toBe(404);
    expect((await call("GET", `/api/connectors/connections/${b.id}`, { key: bob.key })).status).toBe(200);
  });

  it("a user_id issued again inherits none of the first holder's connections, nor its open authorizations", async () => {
    const fake = fakeProvider();
    const first = await connectorsUser();
    const a = await connect(fake, { key: first.key });
    // An authorization the first holder started and never completed.
    const pending = await start(first.key);
    expect(pending.status).toBe(200);
    const { code, state } = fake.consent(pending.body.data.authorization_url);
    expect((await call("GET", `/api/connectors/connections/${a.id}`, { key: first.key })).status).toBe(200);

    const key = await admin();
    expect((await call("DELETE", `/api/auth/api-keys/${first.user_id}`, { key })).status).toBe(200);
    const reissued = await call("POST", "/api/auth/api-keys", { key, body: { user_id: first.user_id, scopes: ["connectors:write"] } });
    expect(reissued.status).toBe(200);
    const second = reissued.body.data.api_key as string;

    expect(await call("GET", "/api/connectors/connections", { key: second })).toMatchObject({ status: 200, body: { data: { items: [], total: 0 } } });
    expect((await call("GET", `/api/connectors/connections/${a.id}`, { key: second })).status).toBe(404);
    expect((await call("POST", `/api/connectors/connections/${a.id}/reconnect`, { key: second })).status).toBe(404);
    expect((await call("DELETE", `/api/connectors/connections/${a.id}`, { key: second })).status).toBe(404);
    expect((await call("POST", COMPLETE, { key: second, body: { state, code } })).status).toBe(400);
    // It is still there, the admin's to manage.
    expect((await call("GET", `/api/connectors/connections/${a.id}`, { key })).body.data.owner_user_id).toBe(first.user_id);
    // The new holder's own connection is its own.
    const b = await connect(fake, { key: second });
    expect((await call("GET", "/api/connectors/connections", { key: second })).body.data.items.map((i: any) => i.connection_id)).toEqual([b.id]);
  });

  it("lists oldest first with a limit cap, a provider filter and the full total", async () => {
    const fake = fakeProvider();
    const carol = await connectorsUser();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await connect(fake, { key: carol.key })).id);
    const page = await call("GET", "/api/connectors/connections?limit=2", { key: carol.key });
    expect(page.body.data.total).toBe(3);
    expect(page.body.data.items.map((i: any) => i.connection_id)).toEqual(ids.slice(0, 2));
    expect((await call("GET", "/api/connectors/connections?provider_id=plain", { key: carol.key })).body.data).toEqual({ items: [], total: 0 });
    expect((await call("GET", "/api/connectors/connections?provider_id=acme&limit=5000", { key: carol.key })).body.data.total).toBe(3);
    for (const bad of ["limit=0", "limit=x", "limit=-1", `provider_id=${MARKER}`]) {
      const r = await call("GET", `/api/connectors/connections?${bad}`, { key: carol.key });
      expect(r.status, bad).toBe(400);
      expect(r.body.error).toContain(bad.split("=")[0]);
      expect(r.text).not.toContain(MARKER);
    }
  });

  it("a connection id that is not one is a 400 naming connection_id", async () => {
    const r = await call("GET", `/api/connectors/connections/${MARKER}`, { key: await admin() });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("connection_id");
    expect(r.text).not.toContain(MARKER);
  });
});

describe("PATCH /api/connectors/connections/{id}/sub-services", () => {
  it("narrows at once and leaves an identical set unchanged", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const { id } = await connect(fake, { key, sub_services: ["mail", "calendar"] });
    const same = await call("PATCH", `/api/connectors/connections/${id}/sub-services`, { key, body: { sub_services: ["calendar", "mail"] } });
    expect(same.status, same.text).toBe(200);
    expect(same.body.data).toMatchObject({ kind: "unchanged", authorization: null, connection: { sub_services: ["mail", "calendar"] } });

    const narrowed = await call("PATCH", `/api/connectors/connections/${id}/sub-services`, { key, body: { sub_services: ["calendar"] } });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.data).toMatchObject({
      kind: "narrowed",
      authorization: null,
      connection: { connection_id: id, sub_services: ["calendar"], scopes: ["cal.read", "cal.write"] },
    });
    expectNoSecrets(narrowed.text, fake);
    expect((await call("GET", `/api/connectors/connections/${id}`, { key })).body.data.sub_services).toEqual(["calendar"]);
    // No provider call was needed.
    expect(fake.tokenCalls).toHaveLength(1);
  });

  it("widening answers a re-consent authorization; the connection changes only when it completes", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const { id } = await connect(fake, { key });
    const before = fake.lastAccess();
    const r = await call("PATCH", `/api/connectors/connections/${id}/sub-services`, { key, body: { sub_services: ["mail", "files"] } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.kind).toBe("reauthorization_required");
    expect(r.body.data.connection.sub_services).toEqual(["mail"]);
    const auth = r.body.data.authorization;
    expect(auth).toMatchObject({ purpose: "widen", connection_id: id, provider_id: "acme", sub_services: ["mail", "files"] });
    expect(new URL(auth.authorization_url).searchParams.get("scope")).toBe("mail.read files");
    expect((await call("GET", `/api/connectors/connections/${id}`, { key })).body.data.sub_services).toEqual(["mail"]);

    const { code, state } = fake.consent(auth.authorization_url);
    const done = await call("POST", COMPLETE, { key, body: { state, code } });
    expect(done.status, done.text).toBe(200);
    expect(done.body.data.kind).toBe("widened");
    expect(done.body.data.connection).toMatchObject({ connection_id: id, sub_services: ["mail", "files"], scopes: ["mail.read", "files"] });
    expect(fake.lastAccess()).not.toBe(before);
    // Still one connection.
    expect((await call("GET", "/api/connectors/connections", { key })).body.data.items.filter((i: any) => i.connection_id === id)).toHaveLength(1);
  });

  it("refuses unknown, empty or repeated sub-services with a 400 naming the field", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const { id } = await connect(fake, { key });
    for (const [subs, field] of [
      [["mail", "nope"], "sub_services.1"],
      [[], "sub_services"],
      [["mail", "mail"], "sub_services"],
    ] as const) {
      const r = await call("PATCH", `/api/connectors/connections/${id}/sub-services`, { key, body: { sub_services: subs } });
      expect(r.status).toBe(400);
      expect(r.body.error).toContain(field);
    }
    expect((await call("PATCH", `/api/connectors/connections/${id}/sub-services`, { key, body: {} })).status).toBe(400);
  });
});

describe("POST /api/connectors/connections/{id}/reconnect", () => {
  it("answers a fresh authorization for the same connection; completing it replaces the tokens", async () => {
    const fake = fakeProvider();
    const alice = await connectorsUser();
    const { id } = await connect(fake, { key: alice.key, sub_services: ["calendar"] });
    const first = fake.lastAccess();
    const sealedBefore = (await storedRows(id))[0].sealed;

    const r = await call("POST", `/api/connectors/connections/${id}/reconnect`, { key: alice.key });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ purpose: "reconnect", connection_id: id, provider_id: "acme", sub_services: ["calendar"] });
    expect(new URL(r.body.data.authorization_url).searchParams.get("scope")).toBe("cal.read cal.write");
    // `{}` is accepted too; anything else is not.
    expect((await call("POST", `/api/connectors/connections/${id}/reconnect`, { key: alice.key, body: {} })).status).toBe(200);
    const bad = await call("POST", `/api/connectors/connections/${id}/reconnect`, { key: alice.key, body: { sub_services: ["mail"] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("sub_services");

    const { code, state } = fake.consent(r.body.data.authorization_url);
    const done = await call("POST", COMPLETE, { key: alice.key, body: { state, code } });
    expect(done.status, done.text).toBe(200);
    expect(done.body.data).toMatchObject({ kind: "reconnected", connection: { connection_id: id, owner_user_id: alice.user_id, sub_services: ["calendar"] } });
    expect(fake.lastAccess()).not.toBe(first);
    expect((await storedRows(id))[0].sealed).not.toBe(sealedBefore);
    expectNoSecrets(done.text, fake);
  });
});

describe("DELETE /api/connectors/connections/{id}", () => {
  it("erases the tokens, the listing row and its open authorizations", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const { id } = await connect(fake, { key });
    const reconnect = await call("POST", `/api/connectors/connections/${id}/reconnect`, { key });
    const { code, state } = fake.consent(reconnect.body.data.authorization_url);
    expect(await storedRows(id)).toHaveLength(1);

    const r = await call("DELETE", `/api/connectors/connections/${id}`, { key });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({ removed: true, connection_id: id });
    expect(await storedRows(id)).toEqual([]);
    expect((await call("GET", `/api/connectors/connections/${id}`, { key })).status).toBe(404);
    expect((await call("DELETE", `/api/connectors/connections/${id}`, { key })).status).toBe(404);
    // The reconnect started before the delete cannot bring it back.
    const late = await call("POST", COMPLETE, { key, body: { state, code } });
    expect(late.status).toBe(400);
    expect(late.body.code).toBe("oauth-state-invalid");
    expect(await storedRows(id)).toEqual([]);
  });
});

describe("without a connector store", () => {
  it("every connection door answers 501 connectors-not-configured; the providers listing still answers", async () => {
    const key = await admin();
    const id = crypto.randomUUID();
    const noStore = { ...VARS, CONNECTORS_STORE_URL: "" };
    const doors: Array<[string, string, unknown?]> = [
      ["POST", START, { provider_id: "acme", sub_services: ["mail"] }],
      ["POST", COMPLETE, { state: "s", code: "c" }],
      ["GET", "/api/connectors/connections"],
      ["GET", `/api/connectors/connections/${id}`],
      ["PATCH", `/api/connectors/connections/${id}/sub-services`, { sub_services: ["mail"] }],
      ["POST", `/api/connectors/connections/${id}/reconnect`],
      ["DELETE", `/api/connectors/connections/${id}`],
      ["POST", "/api/connectors/tokens/reencrypt"],
    ];
    for (const [method, path, body] of doors) {
      const r = await call(method, path, { key, body }, noStore);
      expect(r.status, `${method} ${path}`).toBe(501);
      expect(r.body).toEqual({ error: "connector store not configured (set CONNECTORS_STORE_URL)", code: "connectors-not-configured" });
    }
    expect((await call("GET", "/api/connectors/providers", { key }, noStore)).status).toBe(200);
  });
});

describe("started authorizations", () => {
  it("the cron pass prunes expired starts and keeps open ones", async () => {
    const key = await admin();
    const open = (await start(key)).body.data.state;
    const old = (await start(key)).body.data.state;
    await env.DB.prepare("UPDATE connector_oauth_starts SET expires_at = ? WHERE state_hash = ?")
      .bind(Date.now() - 1, await sha256Hex(old))
      .run();
    const removed = await pruneStarts(env.DB, Date.now());
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await startRow(old)).toBeNull();
    expect(await startRow(open)).not.toBeNull();
  });

  it("an initiator holds at most MAX_OPEN_STARTS open authorizations: the oldest go first", async () => {
    const user = await connectorsUser();
    const states: string[] = [];
    for (let i = 0; i < MAX_OPEN_STARTS + 2; i++) states.push((await start(user.key)).body.data.state);
    const { n } = must(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM connector_oauth_starts WHERE initiator_user_id = ?").bind(user.user_id).first<{ n: number }>(),
      "the row",
    );
    expect(n).toBe(MAX_OPEN_STARTS);
    expect(await startRow(states[0])).toBeNull();
    expect(await startRow(states[1])).toBeNull();
    expect(await startRow(must(states.at(-1), "states.at(-1)"))).not.toBeNull();
  });
});
