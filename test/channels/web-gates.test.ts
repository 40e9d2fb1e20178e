/** Entry gates (docs/channels.md, "Web sites and entry gates"): the switch, the codes, and admitEntry. */
import { env } from "cloudflare:workers";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type GateLimits, MAX_LIVE_CODES, admitEntry, gateBucketCapacity } from "../../src/web-chat/gates";
import { admin, call, expectNotConfigured, mintKey, uniq } from "../helpers/http";

const gatePath = (identity: string) => `/api/channels/web/gates/${identity}`;
const codesPath = (identity: string) => `${gatePath(identity)}/codes`;
const LIMITS: GateLimits = { guesses: 10, windowSeconds: 300, bucketMaxEntries: 10_000 };

async function setGate(identity: string, enabled: boolean): Promise<void> {
  const r = await call("PUT", gatePath(identity), { key: await admin(), body: { enabled } });
  if (r.status !== 200) throw new Error(`gate switch failed: ${r.status} ${JSON.stringify(r.body)}`);
}

async function newCode(identity: string, body: Record<string, unknown> = { label: "door" }): Promise<{ code_id: string; code: string }> {
  const r = await call("POST", codesPath(identity), { key: await admin(), body });
  if (r.status !== 201) throw new Error(`code create failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** A gated identity with one live code. */
async function gated(): Promise<{ identity: string; code: string; code_id: string }> {
  const identity = uniq("gate");
  await setGate(identity, true);
  return { identity, ...(await newCode(identity)) };
}

describe("the gate doors", () => {
  it("start off with no codes, switch on and off", async () => {
    const identity = uniq("gate");
    expect((await call("GET", gatePath(identity), { key: await admin() })).body.data).toEqual({ identity, enabled: false, codes: [] });
    const on = await call("PUT", gatePath(identity), { key: await admin(), body: { enabled: true } });
    expect(on.status).toBe(200);
    expect(on.body.data).toEqual({ identity, enabled: true, codes: [] });
    expect((await call("GET", gatePath(identity), { key: await admin() })).body.data.enabled).toBe(true);
    await setGate(identity, false);
    expect((await call("GET", gatePath(identity), { key: await admin() })).body.data.enabled).toBe(false);
  });

  it("refuses a wrong body, unknown fields and a bad identity", async () => {
    const identity = uniq("gate");
    const key = await admin();
    expect((await call("PUT", gatePath(identity), { key, body: { enabled: "yes" } })).status).toBe(400);
    expect((await call("PUT", gatePath(identity), { key, body: { enabled: true, codes: [] } })).status).toBe(400);
    expect((await call("PUT", gatePath(identity), { key, body: {} })).status).toBe(400);
    expect((await call("PUT", gatePath("bad.identity"), { key, body: { enabled: true } })).status).toBe(400);
    expect((await call("GET", gatePath("y".repeat(65)), { key })).status).toBe(400);
  });

  it("lets a channels:read key read but not write", async () => {
    const identity = uniq("gate");
    const reader = await mintKey({ scopes: ["channels:read"] });
    const writer = await mintKey({ scopes: ["channels:write"] });
    expect((await call("GET", gatePath(identity), { key: reader.key })).status).toBe(200);
    expect((await call("PUT", gatePath(identity), { key: reader.key, body: { enabled: true } })).status).toBe(403);
    expect((await call("POST", codesPath(identity), { key: reader.key, body: { label: "x" } })).status).toBe(403);
    const created = await call("POST", codesPath(identity), { key: writer.key, body: { label: "x" } });
    expect(created.status).toBe(201);
    expect((await call("DELETE", `${codesPath(identity)}/${created.body.data.code_id}`, { key: reader.key })).status).toBe(403);
    expect((await call("DELETE", `${codesPath(identity)}/${created.body.data.code_id}`, { key: writer.key })).status).toBe(200);
    const listed = await call("GET", gatePath(identity), { key: reader.key });
    expect(listed.body.data.codes[0]).toMatchObject({ code_id: created.body.data.code_id, created_by: writer.user_id, revoked: true });
    expect((await call("GET", gatePath(identity))).status).toBe(401);
    expect((await call("POST", codesPath(identity), { body: { label: "x" } })).status).toBe(401);
  });

  it("answers 501 when the conversations store is not configured", async () => {
    const identity = uniq("gate");
    await expectNotConfigured(
      [
        ["GET", gatePath(identity)],
        ["PUT", gatePath(identity), { enabled: true }],
        ["POST", codesPath(identity), { label: "x" }],
        ["DELETE", `${codesPath(identity)}/gc_x`],
      ],
      await admin(),
      expect,
    );
  });
});

describe("entry codes", () => {
  it("are shown once at creation and stored only as their SHA-256", async () => {
    const identity = uniq("gate");
    const r = await call("POST", codesPath(identity), { key: await admin(), body: { label: "front desk" } });
    expect(r.status).toBe(201);
    const { code_id, code, label, expires_at } = r.body.data;
    expect(code).toMatch(/^entry-[A-Za-z0-9_-]{43}$/);
    expect(label).toBe("front desk");
    expect(expires_at).toBeNull();

    const listed = await call("GET", gatePath(identity), { key: await admin() });
    expect(listed.body.data.codes).toEqual([
      { code_id, label: "front desk", expires_at: null, revoked: false, created_at: expect.any(String), created_by: "root" },
    ]);
    const hash = createHash("sha256").update(code).digest("hex");
    expect(JSON.stringify(listed.body)).not.toContain(code);
    expect(JSON.stringify(listed.body)).not.toContain(hash);

    const row = await env.DB.prepare("SELECT * FROM web_gate_codes WHERE code_id = ?").bind(code_id).first<Record<string, unknown>>();
    expect(row?.code_hash).toBe(hash);
    expect(Object.values(row ?? {})).not.toContain(code);
  });

  it("take an expiry in the future, normalized to UTC", async () => {
    const identity = uniq("gate");
    const r = await call("POST", codesPath(identity), { key: await admin(), body: { label: "soon", expires_at: "2099-06-01T12:00:00+02:00" } });
    expect(r.status).toBe(201);
    expect(r.body.data.expires_at).toBe("2099-06-01T10:00:00.000Z");
  });

  it("refuse a bad label, a past or malformed expiry and unknown fields", async () => {
    const identity = uniq("gate");
    const key = await admin();
    const post = (body: unknown) => call("POST", codesPath(identity), { key, body });
    expect((await post({ label: "" })).status).toBe(400);
    expect((await post({ label: "x".repeat(101) })).status).toBe(400);
    expect((await post({ label: "x".repeat(100) })).status).toBe(201);
    expect((await post({})).status).toBe(400);
    const past = await post({ label: "late", expires_at: "2001-01-01T00:00:00Z" });
    expect(past.status).toBe(400);
    expect(past.body.error).toContain("expires_at");
    expect((await post({ label: "x", expires_at: "tomorrow" })).status).toBe(400);
    expect((await post({ label: "x", expires_at: 4102444800000 })).status).toBe(400);
    expect((await post({ label: "x", code: "entry-chosen" })).status).toBe(400);
  });

  it("are revoked by DELETE (again: no change), and a code of another identity is 404", async () => {
    const identity = uniq("gate");
    const { code_id } = await newCode(identity);
    const path = `${codesPath(identity)}/${code_id}`;
    const del = await call("DELETE", path, { key: await admin() });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ code_id, revoked: true });
    expect((await call("DELETE", path, { key: await admin() })).status).toBe(200);
    expect((await call("GET", gatePath(identity), { key: await admin() })).body.data.codes[0].revoked).toBe(true);
    expect((await call("DELETE", `${codesPath(identity)}/gc_unknown`, { key: await admin() })).status).toBe(404);
    expect((await call("DELETE", `${codesPath(uniq("gate"))}/${code_id}`, { key: await admin() })).status).toBe(404);
  });

  it(`stop at ${MAX_LIVE_CODES} live codes per identity; a revoked one frees a place`, async () => {
    const identity = uniq("gate");
    const now = new Date().toISOString();
    const insert = env.DB.prepare(
      "INSERT INTO web_gate_codes (code_id, identity, label, code_hash, expires_at, revoked_at, created_at, created_by) VALUES (?, ?, 'bulk', ?, NULL, NULL, ?, 'root')",
    );
    await env.DB.batch(Array.from({ length: MAX_LIVE_CODES }, (_, i) => insert.bind(`bulk_${identity}_${i}`, identity, `hash-${identity}-${i}`, now)));
    const full = await call("POST", codesPath(identity), { key: await admin(), body: { label: "one more" } });
    expect(full.status).toBe(409);
    expect(full.body.code).toBe("too_many_codes");
    await call("DELETE", `${codesPath(identity)}/bulk_${identity}_0`, { key: await admin() });
    expect((await call("POST", codesPath(identity), { key: await admin(), body: { label: "one more" } })).status).toBe(201);
  });
});

describe("admitEntry", () => {
  it("admits anyone while the gate is off, code or not", async () => {
    const identity = uniq("gate");
    expect(await admitEntry(env, identity, null, "net-a", Date.now(), LIMITS)).toBe(true);
    expect(await admitEntry(env, identity, "entry-wrong", "net-a", Date.now(), LIMITS)).toBe(true);
    await setGate(identity, true);
    await setGate(identity, false);
    expect(await admitEntry(env, identity, null, "net-a", Date.now(), LIMITS)).toBe(true);
  });

  it("admits a live code of this identity only", async () => {
    const { identity, code } = await gated();
    const other = await gated();
    const now = Date.now();
    expect(await admitEntry(env, identity, code, "net-a", now, LIMITS)).toBe(true);
    expect(await admitEntry(env, identity, null, "net-a", now, LIMITS)).toBe(false);
    expect(await admitEntry(env, identity, "", "net-a", now, LIMITS)).toBe(false);
    expect(await admitEntry(env, identity, `${code}x`, "net-a", now, LIMITS)).toBe(false);
    expect(await admitEntry(env, identity, "entry-" + "A".repeat(43), "net-a", now, LIMITS)).toBe(false);
    expect(await admitEntry(env, identity, other.code, "net-a", now, LIMITS)).toBe(false);
    expect(await admitEntry(env, other.identity, other.code, "net-a", now, LIMITS)).toBe(true);
  });

  it("refuses a revoked code and an expired one", async () => {
    const { identity, code, code_id } = await gated();
    const soon = new Date(Date.now() + 60_000).toISOString();
    const expiring = await newCode(identity, { label: "an hour", expires_at: soon });
    expect(await admitEntry(env, identity, expiring.code, "net-a", Date.now(), LIMITS)).toBe(true);
    expect(await admitEntry(env, identity, expiring.code, "net-b", Date.parse(soon) + 1, LIMITS)).toBe(false);
    expect(await admitEntry(env, identity, code, "net-c", Date.parse(soon) + 1, LIMITS)).toBe(true);
    await call("DELETE", `${codesPath(identity)}/${code_id}`, { key: await admin() });
    expect(await admitEntry(env, identity, code, "net-d", Date.now(), LIMITS)).toBe(false);
  });

  it("counts every check with a code: the 11th in the window is refused even with a good code", async () => {
    const { identity, code } = await gated();
    const now = Date.now();
    for (let i = 0; i < 9; i++) expect(await admitEntry(env, identity, `entry-wrong${i}`, "net-a", now, LIMITS)).toBe(false);
    // The 10th check, with the right code: still under the throttle.
    expect(await admitEntry(env, identity, code, "net-a", now, LIMITS)).toBe(true);
    expect(await admitEntry(env, identity, code, "net-a", now, LIMITS)).toBe(false);
    // Another client, and the same client on another identity, have their own guesses.
    expect(await admitEntry(env, identity, code, "net-b", now, LIMITS)).toBe(true);
    const other = await gated();
    expect(await admitEntry(env, other.identity, other.code, "net-a", now, LIMITS)).toBe(true);
    // The next window starts afresh.
    expect(await admitEntry(env, identity, code, "net-a", now + LIMITS.windowSeconds * 1000, LIMITS)).toBe(true);
  });

  it("spends nothing on a check without a code", async () => {
    const { identity, code } = await gated();
    const now = Date.now();
    for (let i = 0; i < 15; i++) expect(await admitEntry(env, identity, null, "net-a", now, LIMITS)).toBe(false);
    expect(await admitEntry(env, identity, code, "net-a", now, LIMITS)).toBe(true);
  });

  it("sizes the bucket so a window never allows more than the guesses", () => {
    expect(gateBucketCapacity(10, 300)).toBe(10);
    expect(gateBucketCapacity(1, 300)).toBe(1);
    // Over an hour a bucket refills its whole capacity once more: half the guesses up front.
    expect(gateBucketCapacity(10, 3600)).toBe(5);
    for (const [guesses, windowSeconds] of [
      [10, 300],
      [3, 60],
      [50, 900],
      [10, 3600],
      [100, 86400],
    ]) {
      const c = gateBucketCapacity(guesses, windowSeconds);
      expect(Math.floor(c * (1 + windowSeconds / 3600)), `${guesses}/${windowSeconds}`).toBeLessThanOrEqual(guesses);
      expect(c).toBeGreaterThanOrEqual(1);
    }
  });
});
