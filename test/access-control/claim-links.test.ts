/**
 * Claim links (docs/login.md): `POST /api/auth/claim-links` makes a one-time `clm-`
 * token carrying a new owned key; `POST /api/login/claim` exchanges it once, throttled per client.
 * Every claim here comes from its own client IP unless a test is about the throttle: a refused
 * claim backs its client off, which would leak into the next test otherwise.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { pruneClaimLinks } from "../../src/access-control/claim-links";
import { sha256Hex } from "../../src/access-control/crypto";
import { echoRoute, send } from "../helpers/bridge";
import { BOOTSTRAP_TOKEN, admin, call, mintKey, uniq } from "../helpers/http";
import { must } from "../../src/platform/must";

let ipCounter = 0;
/** A client IP no other claim in this file used. */
function freshIp(): Record<string, string> {
  ipCounter += 1;
  return { "cf-connecting-ip": `10.77.${Math.floor(ipCounter / 250)}.${ipCounter % 250}` };
}

async function makeLink(body: Record<string, unknown>, key?: string) {
  return call("POST", "/api/auth/claim-links", { key: key ?? (await admin()), body: { user_id: uniq("clm"), scopes: ["tools:read"], ...body } });
}

async function claim(token: string, headers: Record<string, string> = freshIp()) {
  return call("POST", "/api/login/claim", { headers, body: { token } });
}

const REFUSED = { error: "claim token is invalid, expired or already used" };

describe("POST /api/auth/claim-links", () => {
  it("answers a clm- token shown once, stored only as its SHA-256, with the default TTL; the key does not exist yet", async () => {
    const user_id = uniq("clm");
    const before = Date.now();
    const r = await makeLink({ user_id, description: "phone" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body.data).sort()).toEqual(["expires_at", "token", "user_id"]);
    expect(r.body.data.token).toMatch(/^clm-[A-Za-z0-9_-]{43}$/);
    expect(r.body.data.user_id).toBe(user_id);
    const ttlMs = Date.parse(r.body.data.expires_at) - before;
    expect(ttlMs).toBeGreaterThanOrEqual(600_000 - 50);
    expect(ttlMs).toBeLessThanOrEqual(600_000 + 5_000);
    const rows = await env.DB.prepare("SELECT * FROM claim_links WHERE user_id = ?").bind(user_id).all();
    expect(rows.results).toHaveLength(1);
    expect(JSON.stringify(rows.results)).not.toContain(r.body.data.token);
    expect(rows.results[0].token_hash).toBe(await sha256Hex(r.body.data.token));
    expect(await env.DB.prepare("SELECT 1 FROM api_keys WHERE user_id = ?").bind(user_id).first()).toBeNull();
  });

  it("takes ttl_seconds up to 3600; above, zero or fractional is 400 naming the field", async () => {
    const before = Date.now();
    const max = await makeLink({ ttl_seconds: 3600 });
    expect(max.status).toBe(200);
    expect(Date.parse(max.body.data.expires_at) - before).toBeGreaterThanOrEqual(3_600_000 - 50);
    const short = await makeLink({ ttl_seconds: 30 });
    expect(Date.parse(short.body.data.expires_at) - before).toBeLessThanOrEqual(35_000);
    for (const ttl of [3601, 0, 1.5, "600"]) {
      const r = await makeLink({ ttl_seconds: ttl });
      expect(r.status, String(ttl)).toBe(400);
      expect(r.body.error).toContain("ttl_seconds");
    }
  });

  it("validates the key as the mint door does: unknown scope ids and roles, bad conditions, unknown fields → 400, nothing stored", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ scopes: ["tools:read", "no-such-scope"] }, "scopes.1"],
      [{ role: "no-such-role" }, "role"],
      [{ role: "Bad Role" }, "role"],
      [{ scopes: ["tools:sometimes"] }, "scopes.0"],
      [{ condition: ".a |" }, "condition"],
      [{ owner_user_id: "root" }, "owner_user_id"],
      [{ disabled: true }, "disabled"],
    ];
    for (const [body, field] of cases) {
      const user_id = uniq("bad");
      const r = await makeLink({ ...body, user_id });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error, JSON.stringify(body)).toContain(field);
      expect(await env.DB.prepare("SELECT 1 FROM claim_links WHERE user_id = ?").bind(user_id).first()).toBeNull();
    }
  });

  it("an owned key may not make links; a non-admin only within its own scopes, and the key is owned by it", async () => {
    const writer = await mintKey({ scopes: ["auth", "tools"] });
    const owned = await mintKey({ scopes: ["auth", "tools:read"] }, writer.key);
    expect(await makeLink({ scopes: ["tools:read"] }, owned.key)).toMatchObject({ status: 403, body: { error: "Forbidden" } });
    expect(await makeLink({ scopes: ["presets:read"] }, writer.key)).toMatchObject({ status: 403, body: { error: "Forbidden" } });
    const reader = await mintKey({ scopes: ["auth:read"] });
    expect((await makeLink({ scopes: [] }, reader.key)).status).toBe(403);

    const link = await makeLink({ scopes: ["tools:read"] }, writer.key);
    expect(link.status).toBe(200);
    const got = await claim(link.body.data.token);
    expect(got.status).toBe(200);
    const me = await call("GET", "/api/auth/me", { key: got.body.data.api_key });
    expect(me.body.data).toMatchObject({ user_id: link.body.data.user_id, owner_user_id: writer.user_id, admin: false, scopes: ["tools:read"] });
  });

  it("409 when the user_id names an existing key or one reserved by an open link; free again once the link expired", async () => {
    const existing = await mintKey({ scopes: [] });
    expect((await makeLink({ user_id: existing.user_id })).status).toBe(409);
    const user_id = uniq("held");
    const first = await makeLink({ user_id });
    expect(first.status).toBe(200);
    const second = await makeLink({ user_id });
    expect(second.status).toBe(409);
    expect(second.body.error).not.toContain(user_id);
    await env.DB.prepare("UPDATE claim_links SET expires_at = ? WHERE user_id = ?")
      .bind(Date.now() - 1, user_id)
      .run();
    expect((await makeLink({ user_id })).status).toBe(200);
  });
});

describe("POST /api/login/claim", () => {
  it("exchanges the token once for the key (no credential needed); a second claim gets the uniform refusal", async () => {
    const link = await makeLink({ description: "tablet" });
    const got = await claim(link.body.data.token);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(Object.keys(got.body.data).sort()).toEqual(["api_key", "key_fingerprint", "user_id"]);
    expect(got.body.data.api_key).toMatch(/^sk-[A-Za-z0-9_-]{43}$/);
    expect(got.body.data.user_id).toBe(link.body.data.user_id);
    expect(got.body.data.key_fingerprint).toMatch(/^[0-9a-f]{32}$/);

    const me = await call("GET", "/api/auth/me", { key: got.body.data.api_key });
    expect(me.body.data).toMatchObject({
      user_id: link.body.data.user_id,
      owner_user_id: "root",
      scopes: ["tools:read"],
      key_fingerprint: got.body.data.key_fingerprint,
    });
    // The key is stored as its hash only, and the link leaves nothing behind.
    const dump = JSON.stringify((await env.DB.prepare("SELECT * FROM api_keys").all()).results);
    expect(dump).not.toContain(got.body.data.api_key);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM claim_links WHERE user_id = ?").bind(link.body.data.user_id).first("n")).toBe(0);
    // Version 1 of its policy history: a mint by the link's creator.
    const versions = await call("GET", `/api/auth/api-keys/${link.body.data.user_id}/policy/versions`, { key: await admin() });
    expect(versions.body.data.items).toEqual([
      expect.objectContaining({
        version: 1,
        action: "mint",
        actor: "root",
        owner_user_id: "root",
        description: "tablet",
        key_fingerprint: got.body.data.key_fingerprint,
      }),
    ]);

    const again = await claim(link.body.data.token);
    expect(again).toMatchObject({ status: 400, body: REFUSED });
  });

  it("unknown, malformed and expired tokens get the very same refusal as a used one", async () => {
    const link = await makeLink({});
    await env.DB.prepare("UPDATE claim_links SET expires_at = ? WHERE token_hash = ?")
      .bind(Date.now() - 1, await sha256Hex(link.body.data.token))
      .run();
    const expired = await claim(link.body.data.token);
    const unknown = await claim(`clm-${"A".repeat(43)}`);
    const malformed = await claim("not-a-claim-token");
    const asKey = await claim(await admin());
    for (const r of [expired, unknown, malformed, asKey]) {
      expect(r.status).toBe(400);
      expect(r.body).toEqual(REFUSED);
    }
    expect(await env.DB.prepare("SELECT 1 FROM api_keys WHERE user_id = ?").bind(link.body.data.user_id).first()).toBeNull();
    // Body shape errors are plain 400s naming the field.
    const noToken = await call("POST", "/api/login/claim", { headers: freshIp(), body: {} });
    expect(noToken.status).toBe(400);
    expect(noToken.body.error).toContain("token");
    expect((await call("POST", "/api/login/claim", { headers: freshIp(), body: { token: "x", extra: 1 } })).status).toBe(400);
  });

  it("two concurrent claims of one token: exactly one gets the key", async () => {
    const link = await makeLink({});
    const answers = await Promise.all([claim(link.body.data.token), claim(link.body.data.token), claim(link.body.data.token)]);
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, 400, 400]);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM api_key_versions WHERE user_id = ?").bind(link.body.data.user_id).first("n")).toBe(1);
  });

  it("refuses (and burns) a link whose creator was revoked or disabled, or whose user_id was minted meanwhile", async () => {
    const creator = await mintKey({ scopes: ["auth", "tools"] });
    const revokedLink = await makeLink({}, creator.key);
    const disabler = await mintKey({ scopes: ["auth", "tools"] });
    const disabledLink = await makeLink({}, disabler.key);
    const takenLink = await makeLink({});

    await call("DELETE", `/api/auth/api-keys/${creator.user_id}`, { key: await admin() });
    await call("PUT", `/api/auth/api-keys/${disabler.user_id}`, { key: await admin(), body: { disabled: true } });
    await mintKey({ user_id: takenLink.body.data.user_id, scopes: [] });

    for (const link of [revokedLink, disabledLink, takenLink]) {
      expect(await claim(link.body.data.token)).toMatchObject({ status: 400, body: REFUSED });
      expect(
        await env.DB.prepare("SELECT 1 FROM claim_links WHERE token_hash = ?")
          .bind(await sha256Hex(link.body.data.token))
          .first(),
      ).toBeNull();
    }
    expect(
      await env.DB.prepare("SELECT 1 FROM api_keys WHERE user_id IN (?, ?)").bind(revokedLink.body.data.user_id, disabledLink.body.data.user_id).first(),
    ).toBeNull();
    // Re-enabling the creator does not revive the burnt link.
    await call("PUT", `/api/auth/api-keys/${disabler.user_id}`, { key: await admin(), body: { disabled: false } });
    expect((await claim(disabledLink.body.data.token)).status).toBe(400);
  });

  it("throttles per client like bootstrap: a bad token locks the client, which is refused even with a good token", async () => {
    const link = await makeLink({});
    const ip = freshIp();
    expect(await claim(`clm-${"B".repeat(43)}`, ip)).toMatchObject({ status: 400, body: REFUSED });
    const locked = await claim(link.body.data.token, ip);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await env.DB.prepare("SELECT 1 FROM api_keys WHERE user_id = ?").bind(link.body.data.user_id).first()).toBeNull();

    // The lock ends (moved into the past rather than waited for); the next failure doubles it.
    const row = () =>
      env.DB.prepare("SELECT failures, blocked_until FROM auth_throttle WHERE client_ip = ?")
        .bind(`claim:${ip["cf-connecting-ip"]}`)
        .first<{ failures: number; blocked_until: number }>();
    expect((await row())?.failures).toBe(1);
    const unlock = () =>
      env.DB.prepare("UPDATE auth_throttle SET blocked_until = ? WHERE client_ip = ?")
        .bind(Date.now() - 1, `claim:${ip["cf-connecting-ip"]}`)
        .run();
    await unlock();
    const t0 = Date.now();
    expect((await claim(`clm-${"C".repeat(43)}`, ip)).status).toBe(400);
    const second = await row();
    expect(second?.failures).toBe(2);
    expect(must(second, "second").blocked_until - t0).toBeGreaterThanOrEqual(2000 - 50);
    expect((await claim(link.body.data.token, ip)).status).toBe(429);

    // Another client is not affected, nor is bootstrap for this one (separate back-off).
    const boot = await call("POST", "/api/keys/bootstrap", { headers: ip, body: { user_id: "x", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(boot.status).toBe(409);

    // Once free again, the good token works and clears the client's failures.
    await unlock();
    expect((await claim(link.body.data.token, ip)).status).toBe(200);
    expect(await row()).toBeNull();
  });

  it("story: a support-agent role, a link for a key with it, redeemed once, and the key sends an operator message within its role", async () => {
    const key = await admin();
    const role = await call("POST", "/api/auth/roles", {
      key,
      body: { name: "support-agent", description: "answers customers", grants: { conversations: "write" } },
    });
    expect(role.status, JSON.stringify(role.body)).toBe(200);
    const link = await makeLink({ scopes: ["conversations", "tools"], role: "support-agent" });
    expect(link.status).toBe(200);
    const got = await claim(link.body.data.token);
    expect(got.status).toBe(200);
    expect((await claim(link.body.data.token)).status).toBe(400);
    const agent = got.body.data.api_key as string;

    const me = (await call("GET", "/api/auth/me", { key: agent })).body.data;
    expect(me).toMatchObject({ owner_user_id: "root", role: "support-agent", admin: false });
    const route = await echoRoute();
    const sent = await send(route.name, { external_user_id: uniq("cust"), text: "hello from support" }, agent);
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    // The role bounds the key: its scopes say tools, the role does not.
    expect(await call("GET", "/api/tools", { key: agent })).toMatchObject({ status: 403, body: { error: "Forbidden" } });
  });
});

describe("pruneClaimLinks", () => {
  it("deletes expired links only", async () => {
    const open = await makeLink({});
    const stale = await makeLink({});
    await env.DB.prepare("UPDATE claim_links SET expires_at = ? WHERE user_id = ?")
      .bind(Date.now() - 1000, stale.body.data.user_id)
      .run();
    const removed = await pruneClaimLinks(env.DB, Date.now());
    expect(removed).toBeGreaterThanOrEqual(1);
    const left = (await env.DB.prepare("SELECT user_id FROM claim_links").all<{ user_id: string }>()).results.map((r) => r.user_id);
    expect(left).toContain(open.body.data.user_id);
    expect(left).not.toContain(stale.body.data.user_id);
    expect((await claim(open.body.data.token)).status).toBe(200);
  });
});
