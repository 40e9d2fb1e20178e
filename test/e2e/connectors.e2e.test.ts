/**
 * Connectors end to end: against a real `wrangler dev`, an OAuth connection
 * completes against a local fake provider (test/e2e/support/fake-oauth.ts, HTTPS under a self-made
 * CA that workerd trusts); an HTTP tool declared with a `{"connection"}` header calls the
 * provider's protected resource with the access token, and once that token expires the next call
 * refreshes it first. The token goes only to the provider's `api_origins`: a tool declared
 * elsewhere is refused. No token, code, verifier or client secret shows in any answer or log line.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, type Reply, http, startDev } from "./harness";
import { type FakeOAuth, startFakeOAuth } from "./support/fake-oauth";
import { type TestPki, makeTestPki, trustEnv } from "./support/tls";
import { must } from "../../src/platform/must";

const CLIENT_ID = "e2e-client-id";
const CLIENT_SECRET = "e2e-client-secret-value";
/** Short-lived access tokens, so the test sees one expire; the refresh skew is 0 below. */
const ACCESS_TTL_SECONDS = 6;
const REDIRECT_URI = "https://app.example.test/oauth/callback";

let pki: TestPki;
let oauth: FakeOAuth;
let dev: DevServer;
let base: string;
let adminKey: string;
/** Every answer's raw text, checked at the end for secrets. */
const answers: string[] = [];

async function call(method: string, path: string, body?: unknown): Promise<Reply> {
  const r = await http(base, method, path, { key: adminKey, body });
  answers.push(JSON.stringify(r.body));
  return r;
}

beforeAll(async () => {
  pki = makeTestPki();
  oauth = await startFakeOAuth(pki, { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, accessTtlSeconds: ACCESS_TTL_SECONDS });
  const providers = [
    {
      id: "fakeoauth",
      display_name: "Fake OAuth",
      description: "A local provider for the e2e test",
      icon_url: `${oauth.origin}/icon.png`,
      kind: "oauth",
      category: "developer_tools",
      sub_services: [
        { id: "profile", display_name: "Profile", scopes: ["profile.read"] },
        { id: "files", display_name: "Files", scopes: ["files.read", "files.write"] },
      ],
      oauth: {
        authorization_endpoint: oauth.authorizeUrl,
        token_endpoint: oauth.tokenUrl,
        client_id_env: "E2E_OAUTH_CLIENT_ID",
        client_secret_env: "E2E_OAUTH_CLIENT_SECRET",
      },
      // The protected resource's origin: the only place the connection's token may be sent.
      api_origins: [oauth.origin],
    },
  ];
  dev = await startDev({
    vars: {
      CONNECTORS_PROVIDERS: JSON.stringify(providers),
      CONNECTORS_OAUTH_REDIRECT_URI: REDIRECT_URI,
      CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS: "0",
      E2E_OAUTH_CLIENT_ID: CLIENT_ID,
      E2E_OAUTH_CLIENT_SECRET: CLIENT_SECRET,
    },
    env: trustEnv(pki),
    // Its output is read for the secrets (no factory server: their output is shared).
    npmStart: true,
  });
  base = dev.baseUrl;
  adminKey = (await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } })).body.data.token;
}, 120_000);

afterAll(async () => {
  await dev?.close();
  await oauth?.stop();
  pki?.cleanup();
});

describe("connectors against a real wrangler dev", () => {
  it("connects through a local OAuth provider; an HTTP tool uses the token and refreshes it when it expires", async () => {
    const providers = await call("GET", "/api/connectors/providers");
    expect(providers.status).toBe(200);
    expect(providers.body.data.providers.map((p: any) => p.id)).toEqual(["fakeoauth"]);
    expect(providers.body.data.categories.map((c: any) => c.id)).toContain("developer_tools");
    expect(JSON.stringify(providers.body)).not.toContain(oauth.tokenUrl);

    // Start: the provider's authorization URL with state and a PKCE challenge.
    const started = await call("POST", "/api/connectors/connections/start", { provider_id: "fakeoauth", sub_services: ["profile", "files"] });
    expect(started.status).toBe(200);
    const url = new URL(started.body.data.authorization_url);
    expect(`${url.origin}${url.pathname}`).toBe(oauth.authorizeUrl);
    expect(url.searchParams.get("scope")).toBe("profile.read files.read files.write");
    expect(url.searchParams.get("redirect_uri")).toBe(REDIRECT_URI);

    // The user consents; the provider redirects back with code and state; the front end completes.
    const { code, state, location } = await oauth.consent(started.body.data.authorization_url);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(state).toBe(started.body.data.state);
    const done = await call("POST", "/api/connectors/oauth/complete", { state, code });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data.kind).toBe("connected");
    const id = done.body.data.connection.connection_id;
    expect(done.body.data.connection.health).toMatchObject({ status: "connected", refreshable: true });
    expect(oauth.tokenRequests.map((t) => [t.grant_type, t.status])).toEqual([["authorization_code", 200]]);
    const issuedAt = Date.now();

    // A replayed state is refused.
    const replay = await call("POST", "/api/connectors/oauth/complete", { state, code });
    expect(replay.status).toBe(400);
    expect(replay.body.code).toBe("oauth-state-invalid");

    // The same header on a tool at another origin (here another port of the same host) is refused.
    const elsewhere = await call("POST", "/api/tools-config/entries", {
      title: "fake_collector",
      kind: "http",
      url: `https://127.0.0.1:${Number(new URL(oauth.origin).port) === 1 ? 2 : 1}/collect`,
      headers: { authorization: { connection: id } },
    });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error).toBe(
      "invalid body: headers.authorization: this URL's origin is not among the api_origins of the connection's provider (CONNECTORS_PROVIDERS)",
    );

    // An HTTP tool whose Authorization header is the connection.
    const declared = await call("POST", "/api/tools-config/entries", {
      title: "fake_profile",
      kind: "http",
      description: "reads the fake provider's protected resource",
      url: oauth.resourceUrl,
      headers: { authorization: { connection: id } },
    });
    expect(declared.status, JSON.stringify(declared.body)).toBe(200);
    expect(declared.body.data.tool.headers).toEqual({ authorization: { connection: id } });

    const first = await call("POST", "/api/run-tool", { tool_name: "fake_profile", arguments: { q: "me" } });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toEqual({ ok: true, token_number: 1 });
    expect(oauth.resourceRequests.at(-1)).toMatchObject({ status: 200, authorization: `Bearer ${oauth.issued.find((t) => t.startsWith("e2e-at-1-"))}` });
    expect(JSON.parse(must(oauth.resourceRequests.at(-1), "oauth.resourceRequests.at(-1)").body)).toEqual({ q: "me" });
    expect(oauth.tokenRequests).toHaveLength(1);

    // Let the access token expire: the next call refreshes it before calling the resource.
    const wait = issuedAt + ACCESS_TTL_SECONDS * 1000 + 500 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const second = await call("POST", "/api/run-tool", { tool_name: "fake_profile", arguments: { q: "again" } });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.data).toEqual({ ok: true, token_number: 2 });
    expect(oauth.tokenRequests.map((t) => [t.grant_type, t.status])).toEqual([
      ["authorization_code", 200],
      ["refresh_token", 200],
    ]);
    expect(oauth.resourceRequests.map((r) => r.status)).toEqual([200, 200]);

    const read = await call("GET", `/api/connectors/connections/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.data.health.last_refreshed_at).not.toBeNull();
    expect(read.body.data.sub_services).toEqual(["profile", "files"]);
    const listed = await call("GET", "/api/connectors/connections");
    expect(listed.body.data.items.map((i: any) => i.connection_id)).toEqual([id]);

    // Nothing secret in any answer nor in the server's log.
    const verifiers = oauth.tokenRequests.map((t) => t.params.code_verifier).filter(Boolean);
    const secrets = [...oauth.issued, ...verifiers, CLIENT_SECRET];
    expect(secrets.length).toBeGreaterThan(5);
    for (const text of [...answers, dev.logs()]) for (const s of secrets) expect(text).not.toContain(s);

    // Deleting the connection stops the tool.
    expect((await call("DELETE", `/api/connectors/connections/${id}`)).status).toBe(200);
    const gone = await call("POST", "/api/run-tool", { tool_name: "fake_profile", arguments: {} });
    expect(gone.status).toBe(500);
    expect(gone.body).toEqual({ error: "connection not found", code: "tool-error" });
  }, 60_000);
});
