/**
 * `GET /api/interactions/stream`: server-sent events of interaction transitions with
 * `id:` lines, a replay after Last-Event-ID, keepalives, a bounded lifetime, and restricted
 * callers receiving only their own interactions' events.
 */
import { describe, expect, it } from "vitest";
import { send } from "../helpers/bridge";
import { BASE, admin, call, mintKey, dispatch } from "../helpers/http";
import type { EventsSince, InteractionEvent, InteractionHubRpc } from "../../src/interactions/rpc";
import { streamInteractionEvents } from "../../src/interactions/stream";
import { askRoute, pendingOf } from "./helpers";
import { must } from "../../src/platform/must";

interface Frame {
  id?: string;
  data?: any;
  comment?: string;
}

function parseFrames(text: string): Frame[] {
  return text
    .split("\n\n")
    .filter((b) => b.trim().length)
    .map((block) => {
      const f: Frame = {};
      for (const line of block.split("\n")) {
        if (line.startsWith("id: ")) f.id = line.slice(4);
        else if (line.startsWith("data: ")) f.data = JSON.parse(line.slice(6));
        else if (line.startsWith(": ")) f.comment = line.slice(2);
      }
      return f;
    });
}

/** An open stream: read frames until `until` holds (or the stream ends), then close it. */
async function openStream(key: string, opts: { lastEventId?: string; query?: string } = {}) {
  const headers: Record<string, string> = { "x-api-key": key };
  if (opts.lastEventId) headers["last-event-id"] = opts.lastEventId;
  const res = await dispatch(`${BASE}/api/interactions/stream${opts.query ?? ""}`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
  const reader = must(res.body, "res.body").getReader();
  const decoder = new TextDecoder();
  let text = "";
  return {
    async until(check: (frames: Frame[]) => boolean, ms = 5000): Promise<Frame[]> {
      const deadline = Date.now() + ms;
      while (!check(parseFrames(text)) && Date.now() < deadline) {
        const next = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), Math.max(1, deadline - Date.now())))]);
        if (!next || next.done) break;
        text += decoder.decode(next.value, { stream: true });
      }
      return parseFrames(text);
    },
    async close() {
      await reader.cancel().catch(() => undefined);
    },
  };
}

const events = (frames: Frame[]) => frames.filter((f) => f.data?.interaction_id);

describe("the interaction stream", () => {
  it("tails created and answered events with ids; Last-Event-ID replays what came after", async () => {
    const key = await admin();
    const stream = await openStream(key);
    await stream.until((f) => f.some((x) => x.comment === "connected"));
    const route = await askRoute();
    const r = await send(route.name, { external_user_id: "sam", text: "Stream me?", wait_seconds: 10 });
    const [pending] = await pendingOf(r.body.data.thread_id);
    await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key, body: { option_id: "yes" } });
    const frames = events(await stream.until((f) => events(f).filter((x) => x.data.interaction_id === pending.interaction_id).length >= 2));
    await stream.close();
    const mine = frames.filter((x) => x.data.interaction_id === pending.interaction_id);
    expect(mine.map((x) => x.data.type)).toEqual(["interaction.created", "interaction.answered"]);
    const [created, answered] = mine;
    expect(Number(answered.id)).toBeGreaterThan(Number(created.id));
    expect(created.data).toMatchObject({ id: Number(created.id), type: "interaction.created", interaction: { status: "pending", question: "Stream me?" } });
    expect(answered.data.interaction).toMatchObject({ status: "answered", answer: { text: "Yes" } });

    // Reconnect after the created event: the answered one is replayed, then the stream ends on time.
    const again = await openStream(key, { lastEventId: created.id, query: "?max_seconds=1" });
    const replay = events(await again.until(() => false, 3000));
    expect(replay.find((x) => x.data.interaction_id === pending.interaction_id)?.data.type).toBe("interaction.answered");
    // The query form of the id works too (EventSource's first connect cannot send the header).
    const viaQuery = await openStream(key, { query: `?max_seconds=1&last_event_id=${created.id}` });
    expect(events(await viaQuery.until(() => false, 3000)).some((x) => x.id === answered.id)).toBe(true);
  });

  it("a restricted caller receives only events of interactions addressed to it", async () => {
    const owner = await mintKey({ scopes: ["interactions"] });
    const mine = await mintKey({ scopes: ["interactions"], owner_user_id: owner.user_id });
    const stream = await openStream(mine.key);
    await stream.until((f) => f.some((x) => x.comment === "connected"));
    const other = await askRoute();
    const forMe = await askRoute({ audience: mine.user_id });
    const a = await send(other.name, { external_user_id: "x", text: "Not yours", wait_seconds: 10 });
    const b = await send(forMe.name, { external_user_id: "y", text: "Yours", wait_seconds: 10 });
    const [pa] = await pendingOf(a.body.data.thread_id);
    const [pb] = await pendingOf(b.body.data.thread_id);
    const frames = events(await stream.until((f) => events(f).some((x) => x.data.interaction_id === pb.interaction_id)));
    await stream.close();
    expect(frames.map((x) => x.data.interaction_id)).toContain(pb.interaction_id);
    expect(frames.map((x) => x.data.interaction_id)).not.toContain(pa.interaction_id);
  });

  it("a Last-Event-ID beyond any given starts over from the newest, saying events were dropped", async () => {
    const key = await admin();
    const stream = await openStream(key, { lastEventId: "999999999" });
    await stream.until((f) => f.some((x) => x.data?.type === "events.dropped"));
    const route = await askRoute();
    const r = await send(route.name, { external_user_id: "far", text: "Far ahead?", wait_seconds: 10 });
    const [pending] = await pendingOf(r.body.data.thread_id);
    const frames = await stream.until((f) => events(f).some((x) => x.data.interaction_id === pending.interaction_id));
    await stream.close();
    expect(frames.filter((f) => f.data?.type === "events.dropped")).toEqual([{ data: { type: "events.dropped", after: 999999999 } }]);
    expect(events(frames).find((x) => x.data.interaction_id === pending.interaction_id)?.data.type).toBe("interaction.created");
  });

  it("refuses a malformed Last-Event-ID", async () => {
    const r = await call("GET", "/api/interactions/stream", { key: await admin(), headers: { "last-event-id": "abc" } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("invalid header: Last-Event-ID must be a non-negative integer");
  });
});

/** A hub that answers `since` from a script (no events: the wait runs out). */
function scriptedHub(answers: Array<Partial<EventsSince>>): InteractionHubRpc & { asked: any[] } {
  const asked: any[] = [];
  let n = 0;
  return {
    asked,
    async publish() {},
    async drop() {
      return 0;
    },
    async since(q) {
      asked.push(q);
      const a = answers[Math.min(n++, answers.length - 1)];
      if (!a.events?.length && q.waitMs > 0) await new Promise((r) => setTimeout(r, q.waitMs));
      return { events: [], last_id: q.after ?? 0, gap: false, ...a };
    },
  };
}

describe("the stream's framing (pure parts over a scripted hub)", () => {
  it("writes nothing more once its key's check fails, and ends", async () => {
    const interaction: any = { interaction_id: "i2", status: "pending", audience: null };
    const ev = (id: number): InteractionEvent => ({
      id,
      type: "interaction.created",
      interaction_id: "i2",
      audience: null,
      at: "2026-01-01T00:00:00.000Z",
      interaction,
    });
    const hub = scriptedHub([{ last_id: 1 }, { events: [ev(2)], last_id: 2 }, { events: [ev(3)], last_id: 3 }]);
    let checks = 0;
    // Allowed for the opening line and the first event, refused from the second push on.
    const res = streamInteractionEvents(hub, {
      after: null,
      audience: null,
      admin: true,
      maxMs: 5_000,
      keepaliveMs: 20,
      stillAllowed: async () => ++checks <= 2,
    });
    const frames = parseFrames(await res.text());
    expect(frames.map((f) => f.id).filter(Boolean)).toEqual(["2"]);
    expect(checks).toBe(3);
  });

  it("sends keepalives while quiet and ends after its lifetime", async () => {
    const hub = scriptedHub([{ last_id: 7 }]);
    const res = streamInteractionEvents(hub, { after: null, audience: null, admin: true, maxMs: 120, keepaliveMs: 30, stillAllowed: async () => true });
    const text = await res.text();
    expect(text.startsWith("retry: 3000\n: connected\n\n")).toBe(true);
    expect(text.split(": keepalive\n\n").length - 1).toBeGreaterThanOrEqual(2);
    // It started from the newest id (no Last-Event-ID) and asked after it, for everyone.
    expect(hub.asked[0]).toMatchObject({ after: null });
    expect(hub.asked[1]).toMatchObject({ after: 7, audience: null });
  });

  it("tells a reader once that events were dropped, and hides a failed run's detail from non-admins", async () => {
    const interaction: any = {
      interaction_id: "i1",
      status: "answered",
      audience: "u1",
      result: { outcome: "error", text: null, error: "agent_error: secret detail", next_interaction_id: null, trace_id: null, finished_at: "x" },
    };
    const event: InteractionEvent = { id: 12, type: "interaction.resumed", interaction_id: "i1", audience: "u1", at: "2026-01-01T00:00:00.000Z", interaction };
    const hub = scriptedHub([
      { events: [event], last_id: 12, gap: true },
      { last_id: 12, gap: true },
    ]);
    const res = streamInteractionEvents(hub, { after: 3, audience: "u1", admin: false, maxMs: 80, keepaliveMs: 20, stillAllowed: async () => true });
    const frames = parseFrames(await res.text());
    const dropped = frames.filter((f) => f.data?.type === "events.dropped");
    expect(dropped).toEqual([{ data: { type: "events.dropped", after: 3 } }]);
    const ev = must(
      frames.find((f) => f.data?.type === "interaction.resumed"),
      "the item found",
    );
    expect(ev.id).toBe("12");
    expect(ev.data.interaction.result.error).toBe("the resumed run failed");
    expect(hub.asked[0]).toMatchObject({ after: 3, audience: "u1" });
  });
});
