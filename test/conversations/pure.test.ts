import { describe, expect, it } from "vitest";
import { liveOverride, personDefaultMode } from "../../src/conversations/model/mode";
import { buildPayload, defaultKwargs, type TurnInbound } from "../../src/conversations/model/payload";
import { adminProjection, callerSafeProjection, isSilence, type AnswerRecord } from "../../src/conversations/model/record";
import { isHttpsUrl } from "../../src/conversations/model/schemas";
import { inferKind } from "../../src/shared/media";
import { apiThreadId, belongsToRoute, channelThreadId, encodePrincipal, parseThreadId, personThreadId } from "../../src/shared/thread-id";
import { cooldownSeconds, take } from "../../src/conversations/door/token-bucket";
import { checkJsonObject, checkParams } from "../../src/conversations/model/transport-bounds";

describe("thread ids", () => {
  it("percent-encodes the principal outside A-Za-z0-9_.-~", () => {
    expect(encodePrincipal("svc-bot_1.x~")).toBe("svc-bot_1.x~");
    expect(encodePrincipal("a b/c:d@é")).toBe("a%20b%2Fc%3Ad%40%C3%A9");
  });
  it("composes api, channel and person ids", () => {
    expect(apiThreadId("sales", "svc:bot", "  user-7 ")).toBe("bridge:sales:svc%3Abot/user-7");
    expect(channelThreadId("sms", " +15551234 ")).toBe("bridge:sms:+15551234");
    expect(personThreadId("p-1")).toBe("bridge:@person:p-1");
  });
  it("parses and guards route membership", () => {
    expect(parseThreadId("bridge:sales:x/y")).toEqual({ kind: "route", route_name: "sales", rest: "x/y" });
    expect(parseThreadId("bridge:@person:abc")).toEqual({ kind: "person", person_id: "abc" });
    expect(parseThreadId("bridge:sales:")).toEqual({ kind: "invalid" });
    expect(parseThreadId("other")).toEqual({ kind: "invalid" });
    expect(belongsToRoute("bridge:sales:x", "sales")).toBe(true);
    expect(belongsToRoute("bridge:sales-2:x", "sales")).toBe(false);
  });
});

describe("token bucket", () => {
  it("admits capacity turns, then refuses with one notice per cooldown window, then refills", () => {
    const cap = 3;
    let state = null as ReturnType<typeof take>["state"] | null;
    const t0 = 1_000_000;
    for (let i = 0; i < cap; i++) {
      const r = take(state, cap, t0);
      expect(r.allowed).toBe(true);
      state = r.state;
    }
    const over1 = take(state, cap, t0 + 1);
    expect(over1).toMatchObject({ allowed: false, notify: true });
    const over2 = take(over1.state, cap, t0 + 2);
    expect(over2).toMatchObject({ allowed: false, notify: false });
    if (!over2.allowed) expect(over2.retryAfterSeconds).toBeGreaterThan(1190);
    // One cooldown later a token is back.
    const later = take(over2.state, cap, t0 + cooldownSeconds(cap) * 1000 + 5);
    expect(later.allowed).toBe(true);
  });
  it("notifies again once a new cooldown window starts", () => {
    let s = take(null, 1, 0).state;
    const a = take(s, 1, 10);
    expect(a).toMatchObject({ allowed: false, notify: true });
    s = a.state;
    expect(take(s, 1, 3_599_000)).toMatchObject({ allowed: false, notify: false });
    const b = take(s, 1, 3_600_011);
    expect(b).toMatchObject({ allowed: true });
    const c = take(b.state, 1, 3_600_012);
    expect(c).toMatchObject({ allowed: false, notify: true });
  });
});

describe("transport bounds", () => {
  it("bounds JSON objects by depth, finiteness and size", () => {
    expect(checkJsonObject({ a: 1 })).toBeNull();
    expect(checkJsonObject([1])).toMatch(/object/);
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 70; i++) {
      deep.x = {};
      deep = deep.x as Record<string, unknown>;
    }
    expect(checkJsonObject(root)).toMatch(/64 levels/);
    expect(checkJsonObject({ big: "x".repeat(33_000) })).toMatch(/32768 bytes/);
    expect(checkJsonObject({ n: Number.POSITIVE_INFINITY })).toMatch(/finite/);
  });
  it("bounds params", () => {
    expect(checkParams({ a: "1" })).toBeNull();
    expect(checkParams(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])))).toMatch(/16 entries/);
    expect(checkParams({ "bad key": "v" })).toMatch(/keys/);
    expect(checkParams({ k: "v".repeat(513) })).toMatch(/512/);
    expect(checkParams(Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`k${i}`, "v".repeat(300)])))).toMatch(/2048 bytes/);
  });
});

describe("payload of spec §4.2", () => {
  const base: TurnInbound = {
    message_id: "m1",
    thread_id: "bridge:r:x",
    kind: "message",
    inbound_id: "m1",
    source: "api",
    text: "hi",
    sender: "u1",
    our_identity: null,
    channel: null,
  };
  const T = { target_kind: "tool" as const, target_name: "echo" };
  const subject = { target_kind: "tool", target_name: "echo", person: null, thread: "bridge:r:x", locale: null };
  it("always has message, sender, our_identity, channel, turn (and thread_id)", () => {
    expect(buildPayload(base, T)).toEqual({
      message: "hi",
      sender: "u1",
      our_identity: null,
      channel: null,
      turn: { id: "m1", inbound: { kind: "message", id: "m1", source: "api" }, subject },
      thread_id: "bridge:r:x",
    });
  });
  it("adds form, params, attachments, location only when supplied and non-empty", () => {
    const p = buildPayload(
      { ...base, form: { a: 1 }, params: { k: "v" }, attachments: [{ kind: "image", url: "https://x/y.png" }], location: { latitude: 1, longitude: 2 } },
      T,
    );
    expect(p).toMatchObject({ form: { a: 1 }, params: { k: "v" }, attachments: [{ kind: "image" }], location: { latitude: 1 } });
    const q = buildPayload({ ...base, params: {}, attachments: [], form: null, location: null }, T);
    expect(q).not.toHaveProperty("params");
    expect(q).not.toHaveProperty("attachments");
    expect(q).not.toHaveProperty("form");
    expect(q).not.toHaveProperty("location");
    expect(q).not.toHaveProperty("person_id");
  });
  it("event turns null message and sender and carry the event", () => {
    const ev = { ...base, kind: "event" as const, inbound_id: "e1", source: "event:order.paid", event: { id: "e1", kind: "order.paid", payload: { n: 1 } } };
    expect(buildPayload(ev, T)).toMatchObject({
      message: null,
      sender: null,
      event: { id: "e1", kind: "order.paid", payload: { n: 1 } },
      turn: { inbound: { kind: "event", id: "e1", source: "event:order.paid" } },
    });
    expect(defaultKwargs(ev, T)).toEqual({
      message: null,
      sender: null,
      turn: { id: "m1", inbound: { kind: "event", id: "e1", source: "event:order.paid" }, subject },
      event: { id: "e1", kind: "order.paid", payload: { n: 1 } },
    });
  });
  it("default kwargs never gain form", () => {
    expect(defaultKwargs({ ...base, form: { a: 1 } }, T)).toEqual({
      message: "hi",
      sender: "u1",
      turn: { id: "m1", inbound: { kind: "message", id: "m1", source: "api" }, subject },
    });
  });
  it("adds person fields when a person is resolved; turn.subject names the person and its locale", () => {
    const p = buildPayload({ ...base, person: { person_id: "p", person_addresses: [], locale: "de" } }, T);
    expect(p).toMatchObject({ person_id: "p", person_addresses: [], turn: { subject: { ...subject, person: "p", locale: "de" } } });
  });
});

describe("records and small rules", () => {
  const rec = {
    message_id: "m",
    route_name: "r",
    door: "api",
    thread_id: "t",
    client_address: "u",
    channel: null,
    our_identity: null,
    provider_message_id: null,
    callback_url: "https://cb",
    caller_principal: "svc",
    origin: "client",
    inbound_kind: "message",
    inbound_text: "hi",
    inbound_form: null,
    inbound_attachments: null,
    inbound_location: null,
    inbound_event: null,
    submitted_by: null,
    status: "failed",
    answer_status: "error",
    answer: "x",
    error: "detail",
    attempts: 3,
    outbound_message_ids: [],
    created_at: "c",
    updated_at: "u",
    expires_at: "e",
  } as AnswerRecord;
  it("caller-safe projection withholds error and delivery bookkeeping", () => {
    const safe = callerSafeProjection(rec);
    for (const k of ["error", "attempts", "outbound_message_ids", "callback_url", "provider_message_id", "expires_at", "inbound_form"])
      expect(safe).not.toHaveProperty(k);
    expect(safe).toMatchObject({ origin: "client", status: "failed", answer: "x" });
    expect(adminProjection(rec)).toMatchObject({ error: "detail", attempts: 3, callback_url: "https://cb" });
    expect(callerSafeProjection({ ...rec, inbound_form: { a: 1 } })).toHaveProperty("inbound_form");
  });
  it("null or blank replies are silence", () => {
    expect([null, "", "  \n", "x"].map((v) => isSilence(v))).toEqual([true, true, true, false]);
  });
  it("accepts only absolute https callback URLs without userinfo", () => {
    expect(isHttpsUrl("https://example.com/hook")).toBe(true);
    expect(isHttpsUrl("http://example.com/hook")).toBe(false);
    expect(isHttpsUrl("/relative")).toBe(false);
    expect(isHttpsUrl("https://user:pw@example.com/")).toBe(false);
    expect(isHttpsUrl("https://")).toBe(false);
    expect(isHttpsUrl("ftp://example.com/")).toBe(false);
  });
  it("infers attachment kinds", () => {
    expect(inferKind({ url: "https://x/a.png" })).toBe("image");
    expect(inferKind({ url: "https://x/a.png", filename: "a.png" })).toBe("document");
    expect(inferKind({ url: "https://x/v.mp4?sig=1" })).toBe("video");
    expect(inferKind({ url: "https://x/a.ogg" })).toBe("audio");
    expect(inferKind({ url: "https://x/blob" })).toBe("document");
  });
});

describe("control mode rules (spec §3.2)", () => {
  const o = { mode: "manual" as const, expires_at: 2000, route_created_at: "2026-01-01T00:00:00.000Z" };
  it("an override is live for its own route incarnation until it expires", () => {
    expect(liveOverride(o, { created_at: o.route_created_at }, 1999)).toBe("manual");
    expect(liveOverride(o, { created_at: o.route_created_at }, 2000)).toBeNull();
    expect(liveOverride(o, { created_at: "2026-01-02T00:00:00.000Z" }, 0)).toBeNull();
    // A person thread's override belongs to no route: only a person-wide stamp reads it.
    expect(liveOverride(o, { created_at: null }, 0)).toBeNull();
    expect(liveOverride({ ...o, route_created_at: null }, { created_at: null }, 0)).toBe("manual");
    expect(liveOverride({ ...o, route_created_at: null }, { created_at: o.route_created_at }, 0)).toBeNull();
  });
  it("a person thread defaults to manual when any route it spans is manual", () => {
    expect(personDefaultMode(["a", "b"], [])).toBe("agent");
    expect(personDefaultMode(["a", "b"], ["b"])).toBe("manual");
    expect(personDefaultMode(["a"], ["b", "c"])).toBe("agent");
    expect(personDefaultMode([], ["a"])).toBe("agent");
  });
});
