/** Verified visitors (docs/channels.md, "Verified visitors"): the setting's doors and the proofs the session door takes. */
import { env } from "cloudflare:workers";
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";
import { ORIGIN, newVisitor, openStream, say, transcriptRows, webDesk } from "../helpers/web-visitor";
import { userVisitorId } from "../../src/web-chat/verification";

const verificationPath = (identity: string) => `/api/channels/web/sites/${identity}/verification`;

async function mintSecret(identity: string, body: Record<string, unknown> = {}): Promise<string> {
  const r = await call("PUT", verificationPath(identity), { key: await admin(), body });
  if (r.status !== 200 || typeof r.body.data.secret !== "string") throw new Error(`mint failed ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data.secret;
}

const hmacHex = (secret: string, userId: string) => createHmac("sha256", secret).update(userId, "utf8").digest("hex");
const b64url = (text: string) => Buffer.from(text, "utf8").toString("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** A compact HS256 token as a site's backend mints it. */
function userToken(secret: string, claims: Record<string, unknown>, header: Record<string, unknown> = { alg: "HS256", typ: "JWT" }): string {
  const signing = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const signature = createHmac("sha256", secret).update(signing, "utf8").digest("base64");
  return `${signing}.${signature.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

const now = () => Math.floor(Date.now() / 1000);

/** A network of its own per call, so the per-network session cap never interferes. */
const freshIp = () => `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

const openSession = (identity: string, proof: Record<string, unknown> = {}) =>
  call("POST", "/api/channels/web/session", { body: { identity, ...proof }, headers: { origin: ORIGIN, "cf-connecting-ip": freshIp() } });

const sayBearer = (identity: string, token: string, text: string) =>
  call("POST", "/api/channels/web/messages", { body: { identity, text }, headers: { origin: ORIGIN, authorization: `Bearer ${token}` } });

describe("the verification doors", () => {
  it("show the secret once, keep it sealed, and never read it back", async () => {
    const identity = uniq("ver");
    const key = await admin();
    expect((await call("GET", verificationPath(identity), { key })).body.data).toEqual({
      identity,
      has_secret: false,
      secret_created_at: null,
      require_verified: false,
    });
    const put = await call("PUT", verificationPath(identity), { key, body: {} });
    expect(put.status).toBe(200);
    const secret: string = put.body.data.secret;
    expect(secret).toMatch(/^tws_[A-Za-z0-9_-]{43}$/);
    const got = await call("GET", verificationPath(identity), { key });
    expect(got.body.data).toMatchObject({ identity, has_secret: true, require_verified: false });
    expect(JSON.stringify(got.body)).not.toContain(secret);
    // Writing again without `rotate` keeps the secret and does not show it.
    const again = await call("PUT", verificationPath(identity), { key, body: { require_verified: true } });
    expect(again.body.data).toMatchObject({ has_secret: true, require_verified: true });
    expect(again.body.data.secret).toBeUndefined();
    const row = await env.DB.prepare("SELECT verify_secret_sealed FROM web_sites WHERE identity = ?").bind(identity).first<{ verify_secret_sealed: string }>();
    expect(row?.verify_secret_sealed).toBeTruthy();
    expect(row?.verify_secret_sealed).not.toContain(secret);
    expect(row?.verify_secret_sealed).not.toContain(secret.slice(4));
    // The site's allowed origins door does not show it either.
    expect(JSON.stringify((await call("GET", `/api/channels/web/sites/${identity}`, { key })).body)).not.toContain(secret);
  });

  it("rotation mints a new secret and the old one stops verifying", async () => {
    const desk = await webDesk();
    const old = await mintSecret(desk.identity);
    const rotated = await call("PUT", verificationPath(desk.identity), { key: await admin(), body: { rotate: true } });
    expect(rotated.status).toBe(200);
    const fresh: string = rotated.body.data.secret;
    expect(fresh).not.toBe(old);
    expect((await openSession(desk.identity, { user_id: "u1", user_hash: hmacHex(old, "u1") })).status).toBe(401);
    expect((await openSession(desk.identity, { user_id: "u1", user_hash: hmacHex(fresh, "u1") })).status).toBe(200);
  });

  it("DELETE forgets the secret: proofs are refused, anonymous visitors welcome", async () => {
    const desk = await webDesk();
    const secret = await mintSecret(desk.identity, { require_verified: true });
    const del = await call("DELETE", verificationPath(desk.identity), { key: await admin() });
    expect(del.body.data).toEqual({ identity: desk.identity, has_secret: false, secret_created_at: null, require_verified: false });
    const r = await openSession(desk.identity, { user_id: "u1", user_hash: hmacHex(secret, "u1") });
    expect([r.status, r.body.code]).toEqual([400, "verification_not_configured"]);
    expect((await openSession(desk.identity)).status).toBe(200);
  });

  it("reads with channels:read, writes with channels:write, and needs SETTINGS_ENCRYPTION_KEY to mint", async () => {
    const identity = uniq("ver");
    const reader = await mintKey({ scopes: ["channels:read"] });
    expect((await call("GET", verificationPath(identity), { key: reader.key })).status).toBe(200);
    expect((await call("PUT", verificationPath(identity), { key: reader.key, body: {} })).status).toBe(403);
    expect((await call("DELETE", verificationPath(identity), { key: reader.key })).status).toBe(403);
    expect((await call("PUT", verificationPath(identity), { key: await admin(), body: { rotate: "yes" } })).status).toBe(400);
    const res = await fetchWithEnv(
      { ...env, SETTINGS_ENCRYPTION_KEY: "" },
      new Request(`${BASE}${verificationPath(identity)}`, {
        method: "PUT",
        headers: { "x-api-key": await admin(), "content-type": "application/json" },
        body: "{}",
      }),
    );
    expect(res.status).toBe(501);
  });
});

describe("POST /api/channels/web/session with a user proof", () => {
  it("takes a valid HMAC and a valid token, both on the user's own address", async () => {
    const desk = await webDesk();
    const secret = await mintSecret(desk.identity);
    const address = await userVisitorId(desk.identity, "user-42");
    const byHash = await openSession(desk.identity, { user_id: "user-42", user_hash: hmacHex(secret, "user-42") });
    expect(byHash.status).toBe(200);
    expect(byHash.body.data.token.split(".")[0]).toBe(address);
    const byToken = await openSession(desk.identity, { user_token: userToken(secret, { sub: "user-42", iat: now(), exp: now() + 600, name: "Ada" }) });
    expect(byToken.status).toBe(200);
    expect(byToken.body.data.token.split(".")[0]).toBe(address);
    expect(byToken.body.data.token).not.toBe(byHash.body.data.token);
  });

  it("refuses forged, expired and malformed proofs without echoing them", async () => {
    const desk = await webDesk();
    const secret = await mintSecret(desk.identity);
    const other = await mintSecret(uniq("ver"));
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ user_id: "SECRETUSER", user_hash: hmacHex(other, "SECRETUSER") }, 401, "user_unverified"],
      [{ user_id: "SECRETUSER", user_hash: hmacHex(secret, "someone-else") }, 401, "user_unverified"],
      [{ user_id: "SECRETUSER", user_hash: "zz" }, 400, "invalid_user_proof"],
      [{ user_id: "SECRETUSER" }, 400, "invalid_user_proof"],
      [{ user_id: "", user_hash: hmacHex(secret, "") }, 400, "invalid_user_proof"],
      [{ user_token: userToken(other, { sub: "SECRETUSER", iat: now(), exp: now() + 600 }) }, 401, "user_unverified"],
      [{ user_token: userToken(secret, { sub: "SECRETUSER", iat: now() - 4000, exp: now() - 600 }) }, 401, "user_token_expired"],
      [{ user_token: userToken(secret, { sub: "SECRETUSER", iat: now(), exp: now() + 7200 }) }, 400, "invalid_user_proof"],
      [{ user_token: userToken(secret, { sub: "SECRETUSER", iat: now() + 900, exp: now() + 1200 }) }, 400, "invalid_user_proof"],
      [{ user_token: userToken(secret, { sub: "SECRETUSER", iat: now(), exp: now() + 600 }, { alg: "none" }) }, 400, "invalid_user_proof"],
      [{ user_token: userToken(secret, { user: "SECRETUSER", iat: now(), exp: now() + 600 }) }, 400, "invalid_user_proof"],
      [{ user_token: "SECRETUSER.not.atoken!" }, 400, "invalid_user_proof"],
      [{ user_token: "SECRETUSER" }, 400, "invalid_user_proof"],
      [{ user_token: userToken(secret, { sub: "SECRETUSER", iat: now(), exp: now() + 600 }), user_id: "SECRETUSER" }, 400, "invalid_user_proof"],
    ];
    for (const [proof, status, code] of cases) {
      const r = await openSession(desk.identity, proof);
      expect([JSON.stringify(proof), r.status, r.body.code]).toEqual([JSON.stringify(proof), status, code]);
      expect(JSON.stringify(r.body)).not.toContain("SECRETUSER");
    }
  });

  it("a token within the clock skew of its expiry still passes", async () => {
    const desk = await webDesk();
    const secret = await mintSecret(desk.identity);
    expect((await openSession(desk.identity, { user_token: userToken(secret, { sub: "late", iat: now() - 700, exp: now() - 5 }) })).status).toBe(200);
  });

  it("require_verified refuses anonymous sessions, new and existing", async () => {
    const desk = await webDesk();
    const anon = await openSession(desk.identity);
    expect(anon.status).toBe(200);
    expect((await sayBearer(desk.identity, anon.body.data.token, "hello")).status).toBe(200);
    const page = await newVisitor(desk);
    const secret = await mintSecret(desk.identity, { require_verified: true });
    // The page's anonymous cookie session too: its messages and its stream.
    expect((await say(desk, page, "hello")).body.code).toBe("verification_required");
    expect((await openStream(desk, page)).status).toBe(401);
    const refused = await openSession(desk.identity);
    expect([refused.status, refused.body.code]).toEqual([401, "verification_required"]);
    const existing = await sayBearer(desk.identity, anon.body.data.token, "still here?");
    expect([existing.status, existing.body.code]).toEqual([401, "verification_required"]);
    const chat = await call("GET", `/api/channels/web/chat/${desk.identity}`, { headers: { "sec-fetch-mode": "navigate" } });
    expect(chat.status).toBe(403);
    const verified = await openSession(desk.identity, { user_id: "member", user_hash: hmacHex(secret, "member") });
    expect(verified.status).toBe(200);
    expect((await sayBearer(desk.identity, verified.body.data.token, "hello")).status).toBe(200);
  });

  it("the same user from two sessions reaches the same thread", async () => {
    const desk = await webDesk();
    const secret = await mintSecret(desk.identity);
    const first = await openSession(desk.identity, { user_token: userToken(secret, { sub: "two-devices", iat: now(), exp: now() + 600 }) });
    expect((await sayBearer(desk.identity, first.body.data.token, "from the laptop")).status).toBe(200);
    const second = await openSession(desk.identity, { user_id: "two-devices", user_hash: hmacHex(secret, "two-devices") });
    expect((await sayBearer(desk.identity, second.body.data.token, "from the phone")).status).toBe(200);
    const address = second.body.data.token.split(".")[0];
    expect(first.body.data.token.split(".")[0]).toBe(address);
    const texts = (await transcriptRows(`bridge:${desk.web}:${address}`)).map((r) => r.text);
    expect(texts).toEqual(expect.arrayContaining(["from the laptop", "from the phone"]));
    // Another identity's user of the same id is another thread.
    expect(await userVisitorId(uniq("ver"), "two-devices")).not.toBe(address);
  });
});
