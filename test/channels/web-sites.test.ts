/** Web sites (docs/channels.md, "Web sites and entry gates"): allowed origins per web identity. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { first } from "../../src/platform/persistence/d1";
import { normalizeOrigin, parseSite, siteStatement } from "../../src/web-chat/sites";
import { DEFAULT_ATTACHMENT_POLICY } from "../../src/web-chat/attachments";
import { z } from "zod";
import { admin, call, expectNotConfigured, mintKey, uniq } from "../helpers/http";

const sitePath = (identity: string) => `/api/channels/web/sites/${identity}`;
const putOrigins = async (identity: string, allowed_origins: unknown, key?: string) =>
  call("PUT", sitePath(identity), { key: key ?? (await admin()), body: { allowed_origins } });

describe("normalizeOrigin", () => {
  it("keeps an origin as a browser sends it", () => {
    expect(normalizeOrigin("https://Example.COM")).toBe("https://example.com");
    expect(normalizeOrigin("https://example.com/")).toBe("https://example.com");
    expect(normalizeOrigin("https://example.com:443")).toBe("https://example.com");
    expect(normalizeOrigin("https://shop.example:8443")).toBe("https://shop.example:8443");
    expect(normalizeOrigin("HTTP://LOCALHOST:5173")).toBe("http://localhost:5173");
    expect(normalizeOrigin("http://127.0.0.1:8080/")).toBe("http://127.0.0.1:8080");
    expect(normalizeOrigin("https://bücher.example")).toBe("https://xn--bcher-kva.example");
    expect(normalizeOrigin("https://[::1]:8443")).toBe("https://[::1]:8443");
  });

  it("refuses what is not exactly an origin", () => {
    for (const text of [
      "",
      "example.com",
      "http://example.com",
      "http://192.168.1.10",
      "ftp://example.com",
      "https://example.com/chat",
      "https://example.com//",
      "https://example.com/?",
      "https://example.com?x=1",
      "https://example.com#top",
      "https://user@example.com",
      "https://user:pw@example.com",
      "https://*.example.com",
      "https://exa_mple.com",
      "https://example.com:99999",
      " https://example.com",
      "https://example.com ",
      "*",
      "null",
    ]) {
      expect(normalizeOrigin(text), text).toBeNull();
    }
  });
});

describe("PUT and GET /api/channels/web/sites/{identity}", () => {
  it("answers the defaults for an identity never configured", async () => {
    const identity = uniq("site");
    const r = await call("GET", sitePath(identity), { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ identity, allowed_origins: [], updated_at: null, updated_by: null });
  });

  it("stores the origins normalized, once each, and reads them back", async () => {
    const identity = uniq("site");
    const put = await putOrigins(identity, ["https://Shop.Example/", "https://shop.example", "http://localhost:5173", "https://b.example:443"]);
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({
      identity,
      allowed_origins: ["https://shop.example", "http://localhost:5173", "https://b.example"],
      updated_by: "root",
    });
    expect(Date.parse(put.body.data.updated_at)).not.toBeNaN();
    const got = await call("GET", sitePath(identity), { key: await admin() });
    expect(got.body.data).toEqual(put.body.data);
    expect((await putOrigins(identity, [])).body.data.allowed_origins).toEqual([]);
  });

  it("refuses a bad origin with a 400 naming its index, never its value", async () => {
    const identity = uniq("site");
    const r = await putOrigins(identity, ["https://ok.example", "https://ok2.example", "https://SECRETMARKER.example/path"]);
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("allowed_origins.2");
    expect(JSON.stringify(r.body)).not.toContain("SECRETMARKER");
    expect(JSON.stringify(r.body).toLowerCase()).not.toContain("secretmarker");
    // Nothing was stored.
    expect((await call("GET", sitePath(identity), { key: await admin() })).body.data.allowed_origins).toEqual([]);
  });

  it("refuses more than 20 origins, a wrong shape, unknown fields and a bad identity", async () => {
    const identity = uniq("site");
    const many = Array.from({ length: 21 }, (_, i) => `https://o${i}.example`);
    expect((await putOrigins(identity, many)).status).toBe(400);
    expect((await putOrigins(identity, many.slice(0, 20))).status).toBe(200);
    expect((await putOrigins(identity, "https://a.example")).status).toBe(400);
    expect((await putOrigins(identity, [42])).status).toBe(400);
    const extra = await call("PUT", sitePath(identity), { key: await admin(), body: { allowed_origins: [], gate_enabled: true } });
    expect(extra.status).toBe(400);
    expect((await call("PUT", sitePath(identity), { key: await admin(), body: {} })).status).toBe(400);
    for (const bad of ["a.b", "x".repeat(65), "%20"]) {
      expect((await putOrigins(bad, [])).status, bad).toBe(400);
    }
    expect((await putOrigins("x".repeat(64), [])).status).toBe(200);
  });

  it("lets a channels:read key read but not write; writes need channels:write", async () => {
    const identity = uniq("site");
    const reader = await mintKey({ scopes: ["channels:read"] });
    const writer = await mintKey({ scopes: ["channels:write"] });
    const other = await mintKey({ scopes: ["tools:read", "tools:write"] });
    expect((await call("GET", sitePath(identity), { key: reader.key })).status).toBe(200);
    expect((await putOrigins(identity, ["https://a.example"], reader.key)).status).toBe(403);
    const w = await putOrigins(identity, ["https://a.example"], writer.key);
    expect(w.status).toBe(200);
    expect(w.body.data.updated_by).toBe(writer.user_id);
    expect((await call("GET", sitePath(identity), { key: other.key })).status).toBe(403);
    expect((await putOrigins(identity, [], other.key)).status).toBe(403);
    expect((await call("GET", sitePath(identity))).status).toBe(401);
    expect((await call("PUT", sitePath(identity), { body: { allowed_origins: [] } })).status).toBe(401);
  });

  it("keeps the gate switch when the origins change, and the origins when the gate switches", async () => {
    const identity = uniq("site");
    expect((await call("PUT", `/api/channels/web/gates/${identity}`, { key: await admin(), body: { enabled: true } })).status).toBe(200);
    await putOrigins(identity, ["https://a.example"]);
    expect((await call("GET", `/api/channels/web/gates/${identity}`, { key: await admin() })).body.data.enabled).toBe(true);
    await call("PUT", `/api/channels/web/gates/${identity}`, { key: await admin(), body: { enabled: false } });
    expect((await call("GET", sitePath(identity), { key: await admin() })).body.data.allowed_origins).toEqual(["https://a.example"]);
  });

  it("siteStatement reads the row parseSite turns into the public doors' view", async () => {
    const identity = uniq("site");
    expect(parseSite(null)).toEqual({
      allowed_origins: [],
      gate_enabled: false,
      require_verified: false,
      prechat: null,
      attachments: DEFAULT_ATTACHMENT_POLICY,
    });
    expect(parseSite(await first(z.unknown(), siteStatement(env.DB, identity)))).toEqual({
      allowed_origins: [],
      gate_enabled: false,
      require_verified: false,
      prechat: null,
      attachments: DEFAULT_ATTACHMENT_POLICY,
    });
    await putOrigins(identity, ["https://a.example", "https://b.example"]);
    await call("PUT", `/api/channels/web/gates/${identity}`, { key: await admin(), body: { enabled: true } });
    const [result] = await env.DB.batch([siteStatement(env.DB, identity).prepared()]);
    expect(parseSite(result.results[0] ?? null)).toEqual({
      allowed_origins: ["https://a.example", "https://b.example"],
      gate_enabled: true,
      require_verified: false,
      prechat: null,
      attachments: DEFAULT_ATTACHMENT_POLICY,
    });
  });

  it("answers 501 when the conversations store is not configured", async () => {
    const identity = uniq("site");
    await expectNotConfigured(
      [
        ["GET", sitePath(identity)],
        ["PUT", sitePath(identity), { allowed_origins: [] }],
      ],
      await admin(),
      expect,
    );
  });
});
