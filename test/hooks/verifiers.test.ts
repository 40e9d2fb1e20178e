/**
 * The hook verifiers (docs/hooks.md "Verifiers"), each against its provider's published
 * test vector where there is one, and against wrong secrets, tampered bodies, stale and future
 * timestamps, and missing or malformed headers. Pure functions: no Worker involved.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { VerifyInput } from "../../src/hooks/verifiers/common";
import { verifyGenericHmac } from "../../src/hooks/verifiers/generic-hmac";
import { verifyGithub } from "../../src/hooks/verifiers/github";
import { standardWebhooksKey, verifyStandardWebhooks } from "../../src/hooks/verifiers/standard-webhooks";
import { verifyStripe } from "../../src/hooks/verifiers/stripe";

const enc = new TextEncoder();
const input = (over: Omit<Partial<VerifyInput>, "headers"> & { body: string; headers: Record<string, string> }): VerifyInput => ({
  raw: enc.encode(over.body),
  headers: new Headers(over.headers),
  secret: over.secret ?? "",
  nowMs: over.nowMs ?? Date.now(),
  toleranceSeconds: over.toleranceSeconds ?? 300,
  signatureHeader: over.signatureHeader,
  deliveryHeader: over.deliveryHeader,
});

describe("GitHub (X-Hub-Signature-256)", () => {
  // docs.github.com, "Validating webhook deliveries": the published test values.
  const secret = "It's a Secret to Everybody";
  const body = "Hello, World!";
  const signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

  it("accepts the published test vector and takes X-GitHub-Delivery as the delivery id", async () => {
    expect(
      await verifyGithub(input({ secret, body, headers: { "x-hub-signature-256": signature, "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958" } })),
    ).toEqual({
      ok: true,
      deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    });
    expect(await verifyGithub(input({ secret, body, headers: { "x-hub-signature-256": signature.toUpperCase().replace("SHA256=", "sha256=") } }))).toEqual({
      ok: true,
      deliveryId: null,
    });
  });

  it("refuses a wrong secret, a tampered body, a missing or malformed header", async () => {
    expect(await verifyGithub(input({ secret: "another secret", body, headers: { "x-hub-signature-256": signature } }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyGithub(input({ secret, body: "Hello, World?", headers: { "x-hub-signature-256": signature } }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyGithub(input({ secret, body, headers: {} }))).toEqual({ ok: false, reason: "missing" });
    for (const bad of ["757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "sha1=757107ea", "sha256=zz", `${signature}00`]) {
      expect(await verifyGithub(input({ secret, body, headers: { "x-hub-signature-256": bad } }))).toEqual({ ok: false, reason: "malformed" });
    }
  });
});

describe("Standard Webhooks (webhook-id / webhook-timestamp / webhook-signature)", () => {
  // github.com/standard-webhooks/standard-webhooks, the reference libraries' test values.
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
  const ts = 1614265330;
  const body = '{"test": 2432232314}';
  const sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
  const at = ts * 1000;
  const headers = (signature: string, over: Record<string, string> = {}) => ({
    "webhook-id": id,
    "webhook-timestamp": String(ts),
    "webhook-signature": signature,
    ...over,
  });

  it("accepts the published test vector; the delivery id is webhook-id", async () => {
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers(sig), nowMs: at }))).toEqual({ ok: true, deliveryId: id });
  });

  it("accepts it among several space-separated signatures (a secret rolling over), other versions ignored", async () => {
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers(`v1,Zm9vYmFy v2,abc ${sig}`), nowMs: at }))).toEqual({
      ok: true,
      deliveryId: id,
    });
  });

  it("the key is the base64 after whsec_ (the prefix is optional)", async () => {
    expect(standardWebhooksKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")).toEqual(standardWebhooksKey("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
    expect(await verifyStandardWebhooks(input({ secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", body, headers: headers(sig), nowMs: at }))).toEqual({
      ok: true,
      deliveryId: id,
    });
    expect(standardWebhooksKey("whsec_not base64!")).toBeNull();
  });

  it("holds the timestamp within the tolerance, either way", async () => {
    expect((await verifyStandardWebhooks(input({ secret, body, headers: headers(sig), nowMs: at + 300_000 }))).ok).toBe(true);
    expect((await verifyStandardWebhooks(input({ secret, body, headers: headers(sig), nowMs: at - 300_000 }))).ok).toBe(true);
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers(sig), nowMs: at + 301_000 }))).toEqual({ ok: false, reason: "stale" });
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers(sig), nowMs: at - 301_000 }))).toEqual({ ok: false, reason: "stale" });
  });

  it("refuses a wrong secret, a tampered body, another id or timestamp, missing and malformed headers", async () => {
    expect(await verifyStandardWebhooks(input({ secret: "whsec_QUFBQUFBQUFBQUFBQUFBQQ==", body, headers: headers(sig), nowMs: at }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyStandardWebhooks(input({ secret, body: '{"test": 2432232315}', headers: headers(sig), nowMs: at }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers(sig, { "webhook-id": "msg_other" }), nowMs: at }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers(sig, { "webhook-timestamp": String(ts + 1) }), nowMs: at }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyStandardWebhooks(input({ secret, body, headers: { "webhook-id": id, "webhook-timestamp": String(ts) }, nowMs: at }))).toEqual({
      ok: false,
      reason: "missing",
    });
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers("g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="), nowMs: at }))).toEqual({
      ok: false,
      reason: "malformed",
    });
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers("v2,abc"), nowMs: at }))).toEqual({ ok: false, reason: "malformed" });
    expect(await verifyStandardWebhooks(input({ secret, body, headers: headers(sig, { "webhook-timestamp": "soon" }), nowMs: at }))).toEqual({
      ok: false,
      reason: "malformed",
    });
  });
});

describe("Stripe (Stripe-Signature)", () => {
  // Stripe publishes the scheme, not a fixed vector: this one is computed with Node's crypto,
  // independently of the service's code: v1 = hex HMAC-SHA256(secret, "<t>.<raw body>").
  const secret = "whsec_test_3f9a1c2b";
  const t = 1_700_000_000;
  const body = '{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"payment_intent.succeeded"}';
  const v1 = (s: string, ts: number, b: string) => createHmac("sha256", s).update(`${ts}.${b}`, "utf8").digest("hex");
  const at = t * 1000;

  it("accepts a signature computed independently; the delivery id is the verified event's id", async () => {
    expect(await verifyStripe(input({ secret, body, headers: { "stripe-signature": `t=${t},v1=${v1(secret, t, body)}` }, nowMs: at }))).toEqual({
      ok: true,
      deliveryId: "evt_1NG8Du2eZvKYlo2CUI79vXWy",
    });
  });

  it("any of several v1 signatures may match; v0 and unknown schemes are ignored", async () => {
    const header = `t=${t},v1=${v1("old secret", t, body)},v0=${"0".repeat(64)},v1=${v1(secret, t, body)},x=1`;
    expect((await verifyStripe(input({ secret, body, headers: { "stripe-signature": header }, nowMs: at }))).ok).toBe(true);
  });

  it("holds the timestamp within the tolerance (300 s by default), either way, with a fixed clock", async () => {
    const header = { "stripe-signature": `t=${t},v1=${v1(secret, t, body)}` };
    expect((await verifyStripe(input({ secret, body, headers: header, nowMs: at + 300_000 }))).ok).toBe(true);
    expect((await verifyStripe(input({ secret, body, headers: header, nowMs: at - 300_000 }))).ok).toBe(true);
    expect(await verifyStripe(input({ secret, body, headers: header, nowMs: at + 300_001 + 999 }))).toEqual({ ok: false, reason: "stale" });
    expect(await verifyStripe(input({ secret, body, headers: header, nowMs: at - 301_000 }))).toEqual({ ok: false, reason: "stale" });
    expect((await verifyStripe(input({ secret, body, headers: header, nowMs: at + 3_600_000, toleranceSeconds: 3600 }))).ok).toBe(true);
  });

  it("refuses a wrong secret, a tampered body, a re-dated signature, missing and malformed headers", async () => {
    const good = `t=${t},v1=${v1(secret, t, body)}`;
    expect(await verifyStripe(input({ secret: "whsec_other", body, headers: { "stripe-signature": good }, nowMs: at }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyStripe(input({ secret, body: body.replace("succeeded", "failed"), headers: { "stripe-signature": good }, nowMs: at }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyStripe(input({ secret, body, headers: { "stripe-signature": `t=${t + 10},v1=${v1(secret, t, body)}` }, nowMs: at }))).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyStripe(input({ secret, body, headers: {}, nowMs: at }))).toEqual({ ok: false, reason: "missing" });
    for (const bad of [
      `v1=${v1(secret, t, body)}`,
      `t=${t}`,
      `t=soon,v1=${v1(secret, t, body)}`,
      `t=${t},v1=xyz`,
      `t=${t},t=${t},v1=${v1(secret, t, body)}`,
      "garbage",
    ]) {
      expect(await verifyStripe(input({ secret, body, headers: { "stripe-signature": bad }, nowMs: at }))).toEqual({ ok: false, reason: "malformed" });
    }
  });

  it("a verified body without an event id has no delivery id (no replay check)", async () => {
    const b = '{"object":"event"}';
    expect(await verifyStripe(input({ secret, body: b, headers: { "stripe-signature": `t=${t},v1=${v1(secret, t, b)}` }, nowMs: at }))).toEqual({
      ok: true,
      deliveryId: null,
    });
  });
});

describe("generic HMAC-SHA256 header", () => {
  const secret = "generic-secret-1";
  const body = '{"event":"build.done"}';
  const hex = createHmac("sha256", secret).update(body, "utf8").digest("hex");

  it("accepts the hex HMAC of the raw body, bare or sha256= prefixed, in the default or a configured header", async () => {
    expect(await verifyGenericHmac(input({ secret, body, headers: { "x-signature-256": hex, "x-delivery-id": "d-1" } }))).toEqual({
      ok: true,
      deliveryId: "d-1",
    });
    expect((await verifyGenericHmac(input({ secret, body, headers: { "x-signature-256": `sha256=${hex}` } }))).ok).toBe(true);
    expect(
      await verifyGenericHmac(input({ secret, body, headers: { "x-my-sig": hex, "x-my-id": "7" }, signatureHeader: "X-My-Sig", deliveryHeader: "X-My-Id" })),
    ).toEqual({ ok: true, deliveryId: "7" });
    // delivery_header null: no replay key even when the default header is present.
    expect(await verifyGenericHmac(input({ secret, body, headers: { "x-signature-256": hex, "x-delivery-id": "d-1" }, deliveryHeader: null }))).toEqual({
      ok: true,
      deliveryId: null,
    });
  });

  it("refuses a wrong secret, a tampered body, the wrong header, a missing or malformed one", async () => {
    expect(await verifyGenericHmac(input({ secret: "other-secret", body, headers: { "x-signature-256": hex } }))).toEqual({ ok: false, reason: "mismatch" });
    expect(await verifyGenericHmac(input({ secret, body: `${body} `, headers: { "x-signature-256": hex } }))).toEqual({ ok: false, reason: "mismatch" });
    expect(await verifyGenericHmac(input({ secret, body, headers: { "x-signature-256": hex }, signatureHeader: "X-Other" }))).toEqual({
      ok: false,
      reason: "missing",
    });
    expect(await verifyGenericHmac(input({ secret, body, headers: {} }))).toEqual({ ok: false, reason: "missing" });
    expect(await verifyGenericHmac(input({ secret, body, headers: { "x-signature-256": "sha1=abc" } }))).toEqual({ ok: false, reason: "malformed" });
  });
});
