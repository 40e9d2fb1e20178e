/**
 * A route's business hours: the doors, and the handoff out of hours sending the away message in
 * the holding message's place, once per handoff.
 */
import { describe, expect, it } from "vitest";
import { fakeNetwork, type NetCall } from "../helpers/network";
import { BASE, admin, call, dispatch, uniq } from "../helpers/http";
import { createRoute, echoKey } from "../helpers/bridge";
import { postTwilio } from "../helpers/webhooks";
import { eventually, rawRows } from "../helpers/threads";
import { address, channelRoute, setMode } from "../operator/helpers";
import { DEFAULT_ATTACHMENT_POLICY } from "../../src/web-chat/attachments";

function net() {
  const calls = fakeNetwork(async (req) => {
    if (new URL(req.url).host === "twilio.fake") return Response.json({ sid: `SM${crypto.randomUUID().replace(/-/g, "")}` }, { status: 201 });
    return new Response(null, { status: 204 });
  });
  return { twilio: () => calls.filter((c) => new URL(c.url).host === "twilio.fake") };
}

const smsTo = (calls: NetCall[], to: string) =>
  calls
    .map((c) => new URLSearchParams(c.body))
    .filter((p) => p.get("To") === to)
    .map((p) => p.get("Body"));

async function settledAll(threadId: string, count: number) {
  return eventually(
    () => rawRows(threadId),
    (rows) => rows.length >= count && rows.every((r) => r.turn_state === "done" && r.status !== "pending_delivery"),
    250,
  );
}

async function putHours(route: string, body: unknown) {
  return call("PUT", `/api/conversations/${route}/hours`, { key: await admin(), body });
}

const ALL_WEEK = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, [["00:00", "24:00"]]]));

describe("the business-hours doors", () => {
  it("answers none (always open), stores, reads back, refuses bad input naming the field, and drops", async () => {
    const r = await channelRoute("twilio");
    const key = await admin();
    const empty = await call("GET", `/api/conversations/${r.name}/hours`, { key });
    expect(empty.status).toBe(200);
    expect(empty.body.data).toMatchObject({ route_name: r.name, hours: null, open_now: true, next_opening: null });

    const bad = await putHours(r.name, { time_zone: "Mars/Olympus", weekly: {} });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain("time_zone");
    const badTime = await putHours(r.name, { time_zone: "UTC", weekly: { mon: [["9", "17:00"]] } });
    expect(badTime.status).toBe(400);
    expect(JSON.stringify(badTime.body)).toContain("weekly");
    expect((await putHours(r.name, { time_zone: "UTC", weekly: {}, colour: "red" })).status).toBe(400);

    const put = await putHours(r.name, { time_zone: "Europe/Berlin", weekly: ALL_WEEK, reply_time_text: "a few minutes" });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ open_now: true, next_opening: null, updated_by: "root" });
    const read = await call("GET", `/api/conversations/${r.name}/hours`, { key });
    expect(read.body.data.hours).toMatchObject({ time_zone: "Europe/Berlin", reply_time_text: "a few minutes", agent_out_of_hours: "answer", locale: "en" });

    expect((await call("DELETE", `/api/conversations/${r.name}/hours`, { key })).status).toBe(200);
    expect((await call("DELETE", `/api/conversations/${r.name}/hours`, { key })).status).toBe(404);
    expect((await call("GET", "/api/conversations/no-such-route/hours", { key })).status).toBe(404);
  });
});

describe("a handoff out of hours", () => {
  it("sends the away message instead of the holding message, once per handoff", async () => {
    const n = net();
    const r = await channelRoute("twilio");
    const key = await admin();
    await call("PUT", `/api/conversations/${r.name}/inbox`, { key, body: { holding_message: "A person will answer you shortly." } });
    // A week without hours: never open, no next opening.
    expect((await putHours(r.name, { time_zone: "UTC", weekly: {}, away_message: "We are closed. Back {next_opening}." })).status).toBe(200);
    const them = address();
    const threadId = `bridge:${r.name}:${them}`;
    const res = await postTwilio({ MessageSid: `SM${crypto.randomUUID().replace(/-/g, "")}`, From: them, To: r.identity, Body: "hello", NumMedia: "0" });
    expect(res.status).toBeLessThan(300);
    await settledAll(threadId, 1);

    expect((await setMode(r.name, threadId, "manual")).status).toBe(200);
    await settledAll(threadId, 2);
    expect((await setMode(r.name, threadId, "manual")).status).toBe(200);
    expect((await rawRows(threadId)).length).toBe(2);
    expect(smsTo(n.twilio(), them)).toEqual(["hello", "We are closed. Back as soon as possible."]);

    // Open all week: the next handoff sends the holding message as before.
    expect((await putHours(r.name, { time_zone: "UTC", weekly: ALL_WEEK })).status).toBe(200);
    expect((await setMode(r.name, threadId, "agent")).status).toBe(200);
    expect((await setMode(r.name, threadId, "manual")).status).toBe(200);
    await settledAll(threadId, 3);
    expect(smsTo(n.twilio(), them)).toEqual(["hello", "We are closed. Back as soon as possible.", "A person will answer you shortly."]);
  });
});

describe("the web chat's config door", () => {
  it("tells the page whether the route is open, its next opening and the expected reply time", async () => {
    const k = await echoKey();
    const identity = uniq("hours").replace(/[^A-Za-z0-9_-]/g, "-");
    const r = await createRoute({
      door: "channel",
      channel: "web",
      our_identity: identity,
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
    });
    const page = await dispatch(`${BASE}/api/channels/web/chat/${identity}`, { headers: { "sec-fetch-mode": "navigate" } });
    const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
    const headers = { origin: new URL(BASE).origin, cookie };

    const none = await call("POST", "/api/channels/web/config", { body: { identity }, headers });
    expect(none.status).toBe(200);
    expect(none.body.data).toEqual({
      open_now: true,
      next_opening: null,
      reply_time_text: null,
      reply_time_seconds: null,
      prechat: null,
      attachments: DEFAULT_ATTACHMENT_POLICY,
      locale: null,
    });

    expect((await putHours(r.name, { time_zone: "UTC", weekly: { mon: [["09:00", "10:00"]] }, reply_time_seconds: 3600 })).status).toBe(200);
    const set = await call("POST", "/api/channels/web/config", { body: { identity }, headers });
    expect(set.status).toBe(200);
    const open = set.body.data.open_now as boolean;
    expect(set.body.data.reply_time_seconds).toBe(3600);
    if (!open) expect(new Date(set.body.data.next_opening).getUTCHours()).toBe(9);

    expect((await call("POST", "/api/channels/web/config", { body: { identity }, headers: { origin: new URL(BASE).origin } })).status).toBe(401);
    expect((await call("POST", "/api/channels/web/config", { body: { identity, extra: 1 }, headers })).status).toBe(400);
  });
});
