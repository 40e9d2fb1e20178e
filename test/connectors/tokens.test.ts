/**
 * Tokens at rest and in answers (docs/connectors.md "Tokens at rest"): sealed with AES-256-GCM
 * under the configured key (random IV per seal, key id stored beside, bound to its connection),
 * never stored or shown in plaintext, never in any answer; and the pure pieces underneath (sealing,
 * PKCE, the token endpoint's answer classification, the header format).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { codeChallengeS256 } from "../../src/connectors/pkce";
import { renderConnectionHeader } from "../../src/outbound/header-ref";
import { keyId, keyRingOf, seal, unseal } from "../../src/connectors/sealing";
import { grantOf, requestToken } from "../../src/connectors/token-endpoint";
import { connectionStub } from "../../src/connectors/rpc";
import { admin, uniq } from "../helpers/http";
import { fakeFetch, hangingFetch } from "../helpers/network";
import { NEW_KEY, OLD_KEY, call, connect, declareTool, expectNoSecrets, fakeProvider, ring, runTool, storedRows } from "./helpers";
import { must } from "../../src/platform/must";

const key32 = (fill: number) => btoa(String.fromCharCode(...new Uint8Array(32).fill(fill)));

describe("tokens at rest", () => {
  it("the object stores the tokens sealed under the current key, never in plaintext, with a fresh IV per seal", async () => {
    const fake = fakeProvider();
    fake.next.code = { expires_in: 5 };
    const { id } = await connect(fake);
    const rows = await storedRows(id);
    expect(rows).toHaveLength(1);
    const text = JSON.stringify(rows);
    for (const t of fake.issued) expect(text).not.toContain(t);
    const sealed = JSON.parse(String(rows[0].sealed));
    expect(Object.keys(sealed).sort()).toEqual(["ct", "iv", "kid"]);
    expect(sealed.kid).toBe(await keyId(OLD_KEY));
    expect(atob(sealed.iv)).toHaveLength(12);
    expect(text).not.toContain(OLD_KEY);

    // The sealed value opens, with the ring, to the tokens issued (bound to this connection).
    const r = await ring();
    const opened = JSON.parse(must(await unseal(r, sealed, `connector-tokens:${id}`), "unseal(r, sealed, `connector-tokens:${…"));
    expect(opened).toEqual({ access_token: fake.issued[0], refresh_token: fake.issued[1], token_type: "Bearer" });
    expect(await unseal(r, sealed, `connector-tokens:${crypto.randomUUID()}`)).toBeNull();

    // A refresh re-seals with a new IV.
    const title = uniq("conn-tool");
    await declareTool(title, { authorization: { connection: id } });
    expect((await runTool(title)).status).toBe(200);
    const after = await storedRows(id);
    const resealed = JSON.parse(String(after[0].sealed));
    expect(resealed.iv).not.toBe(sealed.iv);
    const afterText = JSON.stringify(after);
    for (const t of fake.issued) expect(afterText).not.toContain(t);
  });

  it("a ciphertext copied into another connection's object does not open there", async () => {
    const fake = fakeProvider();
    const a = await connect(fake);
    const b = await connect(fake);
    const sealedA = JSON.parse(String((await storedRows(a.id))[0].sealed));
    const r = await ring();
    expect(await unseal(r, sealedA, `connector-tokens:${b.id}`)).toBeNull();
    expect(await unseal(r, sealedA, `connector-tokens:${a.id}`)).not.toBeNull();
  });

  it("no answer of any door carries a token, a verifier, the client secret or the key", async () => {
    const fake = fakeProvider();
    fake.next.code = { expires_in: 5 };
    const key = await admin();
    const texts: string[] = [];
    const keep = <T extends { text: string }>(r: T) => (texts.push(r.text), r);
    keep(await call("GET", "/api/connectors/providers", { key }));
    const started = keep(await call("POST", "/api/connectors/connections/start", { key, body: { provider_id: "acme", sub_services: ["mail"] } }));
    const { code, state } = fake.consent(started.body.data.authorization_url);
    const done = keep(await call("POST", "/api/connectors/oauth/complete", { key, body: { state, code } }));
    const id = done.body.data.connection.connection_id;
    keep(await call("GET", "/api/connectors/connections", { key }));
    keep(await call("GET", `/api/connectors/connections/${id}`, { key }));
    keep(await call("PATCH", `/api/connectors/connections/${id}/sub-services`, { key, body: { sub_services: ["mail", "calendar"] } }));
    keep(await call("POST", `/api/connectors/connections/${id}/reconnect`, { key }));
    const title = uniq("conn-tool");
    keep(await declareTool(title, { authorization: { connection: id } }));
    keep(await runTool(title));
    keep(await call("POST", "/api/connectors/tokens/reencrypt", { key }));
    keep(await call("DELETE", `/api/connectors/connections/${id}`, { key }));
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code", "refresh_token"]);
    const verifier = must(fake.tokenCalls[0].params.get("code_verifier"), "the entry");
    for (const text of texts) {
      expectNoSecrets(text, fake);
      expect(text).not.toContain(verifier);
      expect(text).not.toContain(OLD_KEY);
    }
  });
});

describe("sealing", () => {
  it("opens with the key its id names, from the current or a previous key, and fails closed otherwise", async () => {
    const [a, b, c] = [key32(1), key32(2), key32(3)];
    const ringA = await keyRingOf({ current: a, previous: [] });
    const sealed = await seal(ringA, "secret text", "aad-1");
    expect(sealed.kid).toBe(await keyId(a));
    expect(await unseal(ringA, sealed, "aad-1")).toBe("secret text");
    expect(await unseal(ringA, sealed, "aad-2")).toBeNull();
    // Rotated: b seals, a still opens old ciphertexts.
    const rotated = await keyRingOf({ current: b, previous: [a] });
    expect(await unseal(rotated, sealed, "aad-1")).toBe("secret text");
    expect((await seal(rotated, "x", "aad")).kid).toBe(await keyId(b));
    // Without a, nothing opens it.
    expect(await unseal(await keyRingOf({ current: c, previous: [b] }), sealed, "aad-1")).toBeNull();
    // A tampered ciphertext does not authenticate.
    const bytes = atob(sealed.ct);
    const flipped = btoa(String.fromCharCode(bytes.charCodeAt(0) ^ 1) + bytes.slice(1));
    expect(await unseal(ringA, { ...sealed, ct: flipped }, "aad-1")).toBeNull();
  });

  it("uses a fresh IV each time and derives key ids that differ per key and reveal nothing of it", async () => {
    const r = await keyRingOf({ current: key32(9), previous: [] });
    const ivs = new Set<string>();
    for (let i = 0; i < 20; i++) ivs.add((await seal(r, "same", "same")).iv);
    expect(ivs.size).toBe(20);
    expect(await keyId(key32(9))).toMatch(/^[0-9a-f]{16}$/);
    expect(await keyId(key32(9))).toBe(await keyId(key32(9)));
    expect(await keyId(key32(9))).not.toBe(await keyId(key32(8)));
    expect(await keyId(NEW_KEY)).not.toBe(await keyId(OLD_KEY));
  });
});

describe("PKCE and the header format", () => {
  it("computes the RFC 7636 S256 challenge", async () => {
    // RFC 7636 Appendix B.
    expect(await codeChallengeS256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  });

  it("renders the token into the format literally (no replacement patterns)", () => {
    const id = "00000000-0000-4000-8000-000000000000";
    expect(renderConnectionHeader({ connection: id }, "t0k")).toBe("Bearer t0k");
    expect(renderConnectionHeader({ connection: id, format: "token={access_token};" }, "a$&b$1")).toBe("token=a$&b$1;");
  });
});

describe("the token endpoint's answers", () => {
  const client = {
    token_endpoint: "https://oauth.fake/token",
    client_id: "id",
    client_secret: "s3cr3t",
    client_auth: "client_secret_basic" as const,
    allow_private_hosts: false,
    timeout_ms: 2000,
  };
  const refresh = { grant_type: "refresh_token" as const, refresh_token: "rt" };
  const answering = (res: () => Response) => fakeFetch(res).fetch;

  it("reads JSON and form answers, bounding expires_in", () => {
    expect(grantOf({ access_token: "a", expires_in: "120", refresh_token: "r", token_type: "bearer", scope: "x y" })).toEqual({
      access_token: "a",
      refresh_token: "r",
      token_type: "bearer",
      expires_in: 120,
      scope: "x y",
    });
    expect(grantOf({ access_token: "a", expires_in: -5 })?.expires_in).toBe(0);
    expect(grantOf({ access_token: "a", expires_in: 1e12 })?.expires_in).toBe(10 * 365 * 86_400);
    expect(grantOf({ access_token: "a", expires_in: "soon" })?.expires_in).toBeNull();
    expect(grantOf({ access_token: "a\r\nX-Evil: 1" })).toBeNull();
    expect(grantOf({ access_token: "" })).toBeNull();
    expect(grantOf({ token: "a" })).toBeNull();
  });

  it("classifies refusals as permanent (400/401 or an error body) and the rest as transient, naming no secret", async () => {
    const form = await requestToken(
      answering(() => new Response("access_token=fa&token_type=bearer", { headers: { "content-type": "application/x-www-form-urlencoded" } })),
      client,
      refresh,
    );
    expect(form).toMatchObject({ ok: true, grant: { access_token: "fa" } });
    const cases: Array<[() => Response, boolean, string]> = [
      [
        () => Response.json({ error: "invalid_grant", error_description: "s3cr3t rt" }, { status: 400 }),
        true,
        "token endpoint answered HTTP 400 (invalid_grant)",
      ],
      [() => Response.json({ error: "invalid_client" }, { status: 401 }), true, "token endpoint answered HTTP 401 (invalid_client)"],
      [() => Response.json({ error: "access_denied" }, { status: 200 }), true, "token endpoint refused the request (access_denied)"],
      [() => new Response("oops s3cr3t", { status: 500 }), false, "token endpoint answered HTTP 500"],
      [() => Response.json({ error: "Has Spaces s3cr3t" }, { status: 503 }), false, "token endpoint answered HTTP 503"],
      [() => new Response(null, { status: 302, headers: { location: "https://elsewhere.fake/" } }), false, "token endpoint answered HTTP 302"],
    ];
    for (const [res, permanent, message] of cases) {
      expect(await requestToken(answering(res), client, refresh)).toEqual({ ok: false, permanent, message });
    }
  });

  it("refuses a private token endpoint before sending anything, and bounds the wait", async () => {
    const counting = fakeFetch(() => Response.json({ access_token: "a" }));
    const r = await requestToken(counting.fetch, { ...client, token_endpoint: "https://127.0.0.1/token" }, refresh);
    expect(r).toMatchObject({ ok: false, permanent: false });
    expect(r.ok || r.message).toContain("outbound address guard");
    expect(counting.calls).toHaveLength(0);
    expect(await requestToken(hangingFetch().fetch, { ...client, timeout_ms: 50 }, refresh)).toEqual({
      ok: false,
      permanent: false,
      message: "token endpoint did not answer within 0.05s",
    });
  });
});

describe("the object's verbs", () => {
  it("answers missing for a connection it does not hold, and erase leaves it reusable", async () => {
    const stub = connectionStub(env, crypto.randomUUID());
    const r = await ring();
    expect(await stub.accessToken(r, 0, Date.now())).toMatchObject({ ok: false, reason: "missing" });
    expect(await stub.health(Date.now())).toMatchObject({ status: "missing" });
    const id = crypto.randomUUID();
    const s = connectionStub(env, id);
    await s.install(id, "acme", { access_token: "one", refresh_token: null, token_type: null, expires_in: null, scope: null }, r, Date.now());
    await s.erase();
    expect(await s.accessToken(r, 0, Date.now())).toMatchObject({ ok: false, reason: "missing" });
    await s.install(id, "acme", { access_token: "two", refresh_token: null, token_type: null, expires_in: null, scope: null }, r, Date.now());
    expect(await s.accessToken(r, 0, Date.now())).toEqual({ ok: true, access_token: "two", token_type: null, provider_id: "acme" });
  });
});
