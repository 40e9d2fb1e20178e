/**
 * The thread object's parts (src/conversations/thread/), each driven alone: its own storage (a fresh object's,
 * migrated), settings, clock and network, and recording fakes for the parts it hands work to.
 * The object-level behaviour stays pinned by test/conversations/ and test/operator/.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { TurnInbound } from "../../../src/conversations/model/payload";
import { type AnswerRecord, TURN_ERROR_TEXT } from "../../../src/conversations/model/record";
import { ROUTE_SNAPSHOT_MS, RouteSnapshots } from "../../../src/conversations/thread/route-reads";
import { WebVisitor } from "../../../src/conversations/thread/web-visitor";
import { appendCheckpoint, checkpointAlarmDue } from "../../../src/targets/checkpoints/thread-memory";
import { ThreadAlarm } from "../../../src/conversations/thread/alarm";
import { DeliveryMachine } from "../../../src/conversations/thread/delivery";
import type { IndexNote, ThreadDeps } from "../../../src/conversations/thread/deps";
import { ThreadIdentity } from "../../../src/conversations/thread/identity";
import { InlineWaiters } from "../../../src/conversations/thread/inline-waiters";
import { THREAD_SCHEMA, getStored, insertRecord, migrate, saveStored } from "../../../src/conversations/thread/store";
import { ThreadMode } from "../../../src/conversations/thread/thread-mode";
import { ThreadInbox } from "../../../src/conversations/thread/inbox";
import { DEFAULT_POLICY } from "../../../src/conversations/model/inbox";
import { TurnLoop, abandonedDetail } from "../../../src/conversations/thread/turn-loop";
import { turnPlugins } from "../../../src/conversations/thread/turn-plugins";
import { createRoute, echoKey } from "../../helpers/bridge";
import { uniq } from "../../helpers/http";
import { fakeFetch } from "../../helpers/network";
import { settingsOf } from "../../targets/helpers";
import { must } from "../../../src/platform/must";

const stubFor = (name: string) => env.THREADS.get(env.THREADS.idFromName(name));

/** Runs `fn` over a fresh, migrated thread object's storage, then leaves it with no alarm or rows. */
async function withStorage<T>(fn: (storage: DurableObjectStorage) => Promise<T>): Promise<T> {
  return runInDurableObject(stubFor(uniq("parts")), async (_o, state) => {
    try {
      return await fn(state.storage);
    } finally {
      await state.storage.deleteAlarm();
      state.storage.sql.exec("DELETE FROM records");
    }
  });
}

/** Deps over `storage` with a settable clock and a network that fails the test unless `fetch` is given. */
function depsOver(storage: DurableObjectStorage, clock: { ms: number }, fetch?: typeof globalThis.fetch): ThreadDeps {
  const settings = settingsOf();
  return {
    storage,
    env: () => env,
    settings: () => settings,
    clock: { now: () => clock.ms },
    fetch:
      fetch ??
      fakeFetch(() => {
        throw new Error("this part must not reach the network");
      }).fetch,
    turn: turnPlugins,
  };
}

/** Recording stand-ins for the alarm and the listing outbox (each note is one settled transition). */
function recorders() {
  const notes: IndexNote[] = [];
  let arms = 0;
  return {
    notes,
    arms: () => arms,
    alarm: { arm: async () => void arms++ },
    index: { note: (change: IndexNote = {}) => void notes.push(change), drained: async () => undefined },
  };
}

function apiRecord(routeName: string, over: Partial<AnswerRecord> = {}): { record: AnswerRecord; inbound: TurnInbound } {
  const id = crypto.randomUUID();
  const threadId = `bridge:${routeName}:u`;
  const now = new Date().toISOString();
  const record: AnswerRecord = {
    message_id: id,
    route_name: routeName,
    door: "api",
    thread_id: threadId,
    client_address: "u",
    channel: null,
    our_identity: null,
    provider_message_id: null,
    callback_url: null,
    caller_principal: null,
    origin: "client",
    inbound_kind: "message",
    inbound_text: "hi",
    inbound_form: null,
    inbound_attachments: null,
    inbound_location: null,
    inbound_event: null,
    submitted_by: null,
    status: "accepted",
    answer_status: null,
    answer: null,
    error: null,
    attempts: 0,
    outbound_message_ids: [],
    created_at: now,
    updated_at: now,
    expires_at: null,
    ...over,
  };
  const inbound: TurnInbound = {
    message_id: id,
    thread_id: threadId,
    kind: "message",
    inbound_id: id,
    source: "api",
    text: "hi",
    sender: "u",
    our_identity: null,
    channel: null,
  };
  return { record, inbound };
}

afterEach(() => vi.restoreAllMocks());

describe("inline waiters", () => {
  it("answers a waiter once with the settled record, and a timed-out waiter with null", async () => {
    const waiters = new InlineWaiters();
    const { record } = apiRecord("w");
    const answered = waiters.wait("a", 10_000);
    expect(waiters.isWaiting("a")).toBe(true);
    waiters.answer("a", record);
    waiters.answer("a", { ...record, answer: "second" });
    expect(await answered).toBe(record);
    expect(waiters.isWaiting("a")).toBe(false);

    const late = waiters.wait("b", 1);
    expect(await late).toBeNull();
    expect(waiters.isWaiting("b")).toBe(false);
  });
});

describe("route snapshots (the route-read rule)", () => {
  it("hands a turn its door's read once, and only while it is fresh", async () => {
    const snaps = new RouteSnapshots();
    const route = { route_name: "r" } as Parameters<RouteSnapshots["remember"]>[1]["route"];
    snaps.remember("m1", { route, key: undefined, at: 1_000 });
    expect(snaps.take("m1", 1_000 + ROUTE_SNAPSHOT_MS - 1)?.route).toBe(route);
    expect(snaps.take("m1", 1_000)).toBeUndefined();
    snaps.remember("m2", { route, key: null, at: 1_000 });
    expect(snaps.take("m2", 1_000 + ROUTE_SNAPSHOT_MS)).toBeUndefined();
  });
});

describe("the alarm part", () => {
  it("arms at the earliest work, leaves an earlier alarm alone, re-arms once fired and deletes it with no work left", async () => {
    await withStorage(async (storage) => {
      const clock = { ms: Date.now() + 86_400_000 };
      const alarm = new ThreadAlarm(depsOver(storage, clock));
      const { record, inbound } = apiRecord("alarm", { status: "pending_delivery" });
      insertRecord(storage, record, inbound, "done", null);
      saveStored(storage, { record, delivery_due_at: clock.ms + 60_000 });
      await alarm.arm();
      expect(await storage.getAlarm()).toBe(clock.ms + 60_000);

      // Later work does not move an alarm that is set earlier.
      saveStored(storage, { record, delivery_due_at: clock.ms + 120_000 });
      await alarm.arm();
      expect(await storage.getAlarm()).toBe(clock.ms + 60_000);
      alarm.fired();
      await alarm.arm();
      expect(await storage.getAlarm()).toBe(clock.ms + 120_000);

      saveStored(storage, { record: { ...record, status: "delivered" }, delivery_due_at: null });
      await alarm.arm();
      expect(await storage.getAlarm()).toBeNull();
    });
  });

  it("appending agent memory never sets the alarm itself; the alarm part arms at the memory's expiry", async () => {
    await withStorage(async (storage) => {
      const clock = { ms: Date.now() + 86_400_000 };
      const mem = { storage, threadId: uniq("mem") };
      appendCheckpoint(mem, [{ role: "user", content: "x" }], { nowMs: clock.ms, ttlMinutes: 5 });
      expect(await storage.getAlarm()).toBeNull();
      await new ThreadAlarm(depsOver(storage, clock)).arm();
      expect(await storage.getAlarm()).toBe(checkpointAlarmDue(storage));
      expect(checkpointAlarmDue(storage)).toBe(clock.ms + 5 * 60_000);
    });
  });
});

describe("the delivery machine", () => {
  it("posts the callback through its own network, backs off on the injected clock, then delivers once", async () => {
    const k = await echoKey();
    const route = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
      callback_url: "https://hooks.example.com/parts",
    });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    await withStorage(async (storage) => {
      const clock = { ms: Date.now() };
      let up = false;
      const net = fakeFetch(() => new Response(null, { status: up ? 204 : 500 }));
      const rec = recorders();
      const delivery = new DeliveryMachine(depsOver(storage, clock, net.fetch), {
        index: rec.index,
        alarm: rec.alarm,
        snapshots: new RouteSnapshots(),
        web: new WebVisitor(storage, { all: () => [], accept: () => {} }, () => clock.ms),
      });
      const { record, inbound } = apiRecord(route.name, {
        status: "pending_delivery",
        answer_status: "answered",
        answer: "hello",
        callback_url: route.route.callback_url,
      });
      insertRecord(storage, record, inbound, "done", null);
      saveStored(storage, { record, delivery_due_at: clock.ms });

      await delivery.drive();
      const after1 = must(getStored(storage, record.message_id), "getStored(storage, record.message_id)");
      expect(after1.record).toMatchObject({ status: "pending_delivery", attempts: 1, error: "callback answered HTTP 500" });
      expect(after1.delivery_due_at).toBe(clock.ms + 60_000);
      expect(after1.delivery_lease_until).toBeNull();
      expect(warn.mock.calls.map((c) => JSON.parse(String(c[0])))).toEqual([
        { event: "delivery_attempt_failed", message_id: record.message_id, via: "callback", attempt: 1, reason: "http_500", final: false },
      ]);

      await delivery.drive(); // nothing due yet on this clock
      expect(net.calls).toHaveLength(1);
      clock.ms += 60_000;
      up = true;
      await delivery.drive();
      const after2 = must(getStored(storage, record.message_id), "getStored(storage, record.message_id)");
      expect(after2.record).toMatchObject({ status: "delivered", attempts: 2, error: null });
      expect(after2.expires_at).toBe(clock.ms + settingsOf().conversations.answerRetentionTtlSeconds * 1000);
      expect(net.calls.map((c) => c.url)).toEqual(["https://hooks.example.com/parts", "https://hooks.example.com/parts"]);
      // The failed attempt noted its counts for the metrics; the terminal transition was noted
      // once for the listing with the second attempt's count (a delivery is not a failure).
      const minuteOf = (ms: number) => Math.floor(ms / 60_000);
      expect(rec.notes).toEqual([
        {
          counters: [
            { minute: minuteOf(clock.ms - 60_000), name: "delivery_attempts", label: route.name, value: 1 },
            { minute: minuteOf(clock.ms - 60_000), name: "delivery_attempt_failures", label: route.name, value: 1 },
          ],
        },
        { counters: [{ minute: minuteOf(clock.ms), name: "delivery_attempts", label: route.name, value: 1 }] },
      ]);
      expect(rec.arms()).toBe(3);
    });
  });
});

describe("the turn loop", () => {
  it("settles a turn already run turn_max_attempts times with the error outcome, without running it", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
    await withStorage(async (storage) => {
      const clock = { ms: Date.now() };
      const deps = depsOver(storage, clock);
      const rec = recorders();
      let deliveries = 0;
      const loop = new TurnLoop(deps, {
        identity: new ThreadIdentity(storage),
        mode: new ThreadMode(deps),
        index: rec.index,
        alarm: rec.alarm,
        waiters: new InlineWaiters(),
        snapshots: new RouteSnapshots(),
        firstRuns: new Set(),
        startDelivery: () => void deliveries++,
        inbox: new ThreadInbox(deps, { policy: async () => DEFAULT_POLICY, defaultSlaMs: () => 60_000, emit: () => undefined, changed: () => undefined }),
      });
      const max = settingsOf().conversations.turnMaxAttempts;
      const { record, inbound } = apiRecord(uniq("gone"));
      insertRecord(storage, record, inbound, "queued", null);
      saveStored(storage, { record, turn_attempts: max });

      await loop.pump();
      const after = must(getStored(storage, record.message_id), "getStored(storage, record.message_id)");
      expect(after).toMatchObject({ turn_state: "done", turn_attempts: max });
      expect(after.record).toMatchObject({ status: "delivered", answer_status: "error", answer: TURN_ERROR_TEXT, error: abandonedDetail(max) });
      expect(error.mock.calls.map((c) => JSON.parse(String(c[0])))).toEqual([{ event: "turn_abandoned", message_id: record.message_id, attempts: max }]);
      expect(deliveries).toBe(0);
    });
  });
});

describe("the schema migration's agent-memory line", () => {
  it("keeps the memory tables and rows an object made before they joined the versioned schema", async () => {
    await withStorage(async (storage) => {
      const sql = storage.sql;
      const threadId = uniq("old-memory");
      appendCheckpoint({ storage, threadId }, [{ role: "user", content: "kept" }], { nowMs: Date.now(), ttlMinutes: null });
      // The previous release: records at schema v2, memory tables made on first use, no memory version.
      sql.exec("DELETE FROM meta WHERE key = 'memory_schema_version'");
      migrate(storage);
      expect(sql.exec("SELECT value FROM meta WHERE key = 'memory_schema_version'").one()).toEqual({ value: "1" });
      expect(sql.exec("SELECT value FROM meta WHERE key = 'schema_version'").one()).toEqual({ value: String(THREAD_SCHEMA.steps.length) });
      expect(sql.exec("SELECT message FROM checkpoint_messages WHERE thread_id = ?", threadId).toArray()).toEqual([
        { message: JSON.stringify({ role: "user", content: "kept" }) },
      ]);
    });
  });

  it("creates the memory tables for an object that never used memory", async () => {
    await withStorage(async (storage) => {
      const sql = storage.sql;
      sql.exec("DROP TABLE checkpoint_messages");
      sql.exec("DROP TABLE checkpoint_threads");
      sql.exec("DELETE FROM meta WHERE key = 'memory_schema_version'");
      migrate(storage);
      const tables = sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'checkpoint_%' ORDER BY name").toArray();
      expect(tables).toEqual([{ name: "checkpoint_messages" }, { name: "checkpoint_threads" }]);
    });
  });
});

describe("the inbox state across its policy read", () => {
  /** An inbox whose policy reads wait until `release` is called, as a slow D1 read would. */
  function slowPolicyInbox(deps: ThreadDeps) {
    const waiting: Array<() => void> = [];
    const inbox = new ThreadInbox(deps, {
      policy: () => new Promise((resolve) => waiting.push(() => resolve(DEFAULT_POLICY))),
      defaultSlaMs: () => 60_000,
      emit: () => undefined,
      changed: () => undefined,
    });
    const release = async () => {
      while (waiting.length === 0) await Promise.resolve();
      for (const go of waiting.splice(0)) go();
    };
    return { inbox, release };
  }

  it("a claim made while a snooze's wake waits for the policy is kept, and the wake still happens", async () => {
    await withStorage(async (storage) => {
      const clock = { ms: 1_000_000 };
      const { inbox, release } = slowPolicyInbox(depsOver(storage, clock));
      // Handed to a human on a route, then snoozed (no policy read: a snooze sets no policy timer).
      const handoff = inbox.modeChanged("manual", "r1", "agent_handoff", null);
      await release();
      await handoff;
      expect((await inbox.act({ kind: "snooze", by: "sam", until: clock.ms + 1000 })).ok).toBe(true);
      clock.ms += 2000;
      const tick = inbox.tick();
      expect((await inbox.act({ kind: "claim", by: "kim", force: false })).ok).toBe(true);
      await release();
      await tick;
      expect(inbox.state()).toMatchObject({ status: "open", waiting_reason: "snooze_ended", assignee: "kim" });
    });
  });

  it("labels set while a handoff waits for the policy are kept beside the wait it starts", async () => {
    await withStorage(async (storage) => {
      const clock = { ms: 2_000_000 };
      const { inbox, release } = slowPolicyInbox(depsOver(storage, clock));
      const handoff = inbox.modeChanged("manual", "r1", "agent_handoff", null);
      clock.ms += 5;
      expect((await inbox.act({ kind: "labels", by: "sam", add: ["vip"], remove: [] })).ok).toBe(true);
      await release();
      await handoff;
      expect(inbox.state()).toMatchObject({ status: "open", waiting_reason: "agent_handoff", labels: ["vip"] });
    });
  });
});
