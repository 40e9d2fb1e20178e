/**
 * The data-lifetime suite (docs/security.md "Every copy of a conversation"), generated from the
 * declared list of copies (src/conversations/operator/data-copies.ts `DATA_COPIES`):
 *
 * 1. Every copy has a fixture below, keyed by its name, and every fixture names a copy: a copy
 *    added to the list without one fails here.
 * 2. For each end of a conversation (forget, erase, retention) one conversation is written through
 *    the real doors: an api caller and a web visitor linked to one person (the visitor opened the
 *    page with link params) who sent a file, the agent's memory of it, a question its turn asked, a notification
 *    to the visitor, a state record about it, an inbox label and a private note on each of its
 *    threads, and (for forget and retention) an unlinked visitor on their own thread, who sent a file too. Each fixture reads back every door and stream that exposes its copy and
 *    must see the conversation there first (so the copy was written through).
 * 3. The end is applied through its door (or, for retention, the settings shortened and the stored
 *    clocks run out, then the prune passes run), and every fixture reads again: a copy the end
 *    reaches shows nothing of the conversation; a copy the list declares out of its reach (with
 *    the reason) still shows it, so the declaration is checked too.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATA_COPIES, type DataCopy } from "../../src/conversations/operator/data-copies";
import { SHARD_COUNT, allShards, shardStub } from "../../src/shards/rpc";
import { readRecord } from "../helpers/bridge";
import { BASE, admin, call, dispatch, fetchWithEnv, uniq } from "../helpers/http";
import { listingCaughtUp } from "../helpers/listing";
import { eventually, makeDue, runAlarm, stubFor } from "../helpers/threads";
import {
  ORIGIN,
  type Visitor,
  type WebDesk,
  apiSay,
  link,
  newVisitor,
  replayed,
  say,
  setSettings,
  settled,
  unsetSettings,
  webDesk,
} from "../helpers/web-visitor";
import { attachmentKey } from "../../src/conversations/model/web";
import { askRoute, interactionObject, pendingOf, stepAt } from "../interactions/helpers";
import { must } from "../../src/platform/must";
import { fakeNetwork } from "../helpers/network";

type End = "forget" | "erase" | "retention";
const ENDS: End[] = ["forget", "erase", "retention"];

/** One conversation written through the doors, and what it left where. */
interface World {
  end: End;
  desk: WebDesk;
  ask: string;
  /** Text and addresses that must not be readable once the end reached a copy. */
  markers: string[];
  visitors: Visitor[];
  /** Threads in play, each with a route that reads it. */
  threads: Array<{ route: string; thread: string }>;
  persons: string[];
  messages: Array<{ route: string; id: string }>;
  interactions: string[];
  state: string;
  subjects: Array<{ kind: "thread" | "person"; key: string }>;
  audience: string;
  /** Trace ids seen before the end (read again after it). */
  traces: Set<string>;
  /** Files the visitors uploaded and sent. */
  attachments: Array<{ visitor: Visitor; id: string }>;
}

const text = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
const leaks = (seen: string, w: World) => w.markers.filter((m) => seen.includes(m));
const q = encodeURIComponent;

/** What each copy's doors and streams answer for the world, as one text. */
const FIXTURES: Record<string, (w: World) => Promise<string>> = {
  "thread-records": async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const t of w.threads) out.push((await call("GET", `/api/conversations/${t.route}/transcript?thread_id=${q(t.thread)}`, { key })).body);
    for (const m of w.messages) out.push((await readRecord(m.route, m.id)).body);
    for (const route of routesOf(w))
      for (const marker of w.markers.slice(0, 3)) out.push((await call("GET", `/api/conversations/${route}/messages/search?q=${q(marker)}`, { key })).body);
    return text(out);
  },
  "thread-inbox": async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const t of w.threads) out.push((await call("GET", `/api/conversations/${t.route}/thread/inbox?thread_id=${q(t.thread)}`, { key })).body);
    out.push(
      await stored(
        w.threads.map((t) => t.thread),
        "SELECT * FROM meta WHERE key = 'inbox'",
      ),
    );
    return text(out);
  },
  "inbox-events": async (w) =>
    text(
      await stored(
        w.threads.map((t) => t.thread),
        "SELECT * FROM inbox_events",
      ),
    ),
  "thread-notes": async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const t of w.threads) {
      out.push((await call("GET", `/api/conversations/${t.route}/thread/notes?thread_id=${q(t.thread)}`, { key })).body);
      out.push((await call("GET", `/api/conversations/${t.route}/transcript?thread_id=${q(t.thread)}&include_notes=true`, { key })).body);
    }
    out.push(
      await stored(
        w.threads.map((t) => t.thread),
        "SELECT * FROM notes",
      ),
    );
    return text(out);
  },
  "web-transcript": async (w) => {
    const out: unknown[] = [];
    for (const v of w.visitors) {
      out.push(await replayed(w.desk, v));
      out.push(await stored(v.home, "SELECT * FROM web_transcript"));
    }
    return text(out);
  },
  "web-attachments": async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const a of w.attachments) {
      const mine = await dispatch(`${BASE}/api/channels/web/attachments/${a.id}?identity=${w.desk.identity}`, { headers: { cookie: a.visitor.cookie } });
      out.push(mine.status, await mine.text());
      const theirs = await dispatch(`${BASE}/api/conversations/${w.desk.web}/attachments/${a.id}`, { headers: { "x-api-key": key } });
      out.push(theirs.status, await theirs.text());
      out.push(await (await env.WEB_ATTACHMENTS.get(attachmentKey(a.id)))?.text());
      out.push(await stored(a.visitor.home, "SELECT * FROM web_attachments"));
    }
    return text(out);
  },
  "web-session": async (w) => {
    const out: unknown[] = [];
    for (const v of w.visitors) {
      out.push(await stored(v.home, "SELECT * FROM web_session WHERE expires_at > ?", Date.now()));
      // As the doors read it: only through a live session.
      out.push(await stored(v.home, "SELECT * FROM web_profile WHERE EXISTS (SELECT 1 FROM web_session WHERE expires_at > ?)", Date.now()));
    }
    return text(out);
  },
  "live-turn": async (w) => {
    // Memory only: the live door answers the thread's running turn and its draft.
    const key = await admin();
    const out: unknown[] = [];
    for (const t of w.threads) out.push((await call("GET", `/api/conversations/${t.route}/thread/live?thread_id=${q(t.thread)}`, { key })).body);
    return text(out);
  },
  "turn-traces": async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const t of w.threads) {
      const runs = await call("GET", `/api/observability/runs?session=${q(t.thread)}`, { key });
      out.push(runs.body);
      for (const r of runs.body.data?.items ?? []) w.traces.add(r.trace_id);
    }
    for (const id of w.traces) out.push((await call("GET", `/api/observability/runs/${id}/trace`, { key })).body);
    return text(out);
  },
  listing: async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const route of routesOf(w)) out.push((await call("GET", `/api/conversations/${route}/threads`, { key })).body);
    out.push(
      await stored(
        w.threads.map((t) => t.thread),
        "SELECT * FROM index_outbox",
      ),
    );
    return text(out);
  },
  "message-directory": async () => {
    const per = await Promise.all(
      Array.from({ length: SHARD_COUNT }, (_, i) =>
        runInDurableObject(shardStub(env, i) as unknown as DurableObjectStub, (_o, state) =>
          state.storage.sql.exec("SELECT * FROM ledger WHERE expires_at IS NULL OR expires_at > ?", Date.now()).toArray(),
        ),
      ),
    );
    return text(per);
  },
  "agent-memory": async (w) => {
    const out: unknown[] = [];
    for (const t of w.threads) out.push(await (stubFor(t.thread) as any).checkpointRead(t.thread));
    return text(out);
  },
  interactions: async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const t of w.threads.filter((x) => x.route === w.ask)) {
      out.push((await call("GET", `/api/interactions?thread_id=${q(t.thread)}`, { key })).body);
      out.push((await call("GET", `/api/interactions/pending?thread_id=${q(t.thread)}`, { key })).body);
    }
    for (const id of w.interactions) out.push(await interactionObject(id).read());
    return text(out);
  },
  states: async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const s of w.subjects) out.push((await call("GET", stateRecord(w.state, s), { key })).body);
    return text(out);
  },
  "notification-feed": async () => text((await call("GET", "/api/notifications", { key: await admin() })).body),
  "tool-runs": async () => text((await call("GET", "/api/tool-runs", { key: await admin() })).body),
  "person-directory": async (w) => {
    const key = await admin();
    const out: unknown[] = [];
    for (const p of w.persons) out.push((await call("GET", `/api/conversations/persons/${p}`, { key })).body);
    return text(out);
  },
  "console-notices": async (w) => {
    // Notices are pushed, never kept: the hub stores tickets only. What it stores is read back here.
    const out: unknown[] = [];
    for (const route of routesOf(w))
      out.push(
        await runInDurableObject(env.CONSOLE_HUBS.get(env.CONSOLE_HUBS.idFromName(route)), (_o, state) =>
          state.storage.sql
            .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
            .toArray()
            .map((t) => state.storage.sql.exec(`SELECT * FROM "${String(t.name)}"`).toArray()),
        ),
      );
    return text(out);
  },
  backups: async () => {
    const res = await call("POST", "/api/backup/export", { key: await admin(), body: {} });
    return text(res.body);
  },
};

function routesOf(w: World): string[] {
  return [w.desk.api, w.desk.web, w.ask];
}

function stateRecord(state: string, s: { kind: string; key: string }): string {
  return `/api/states/${state}/records/agent/echo/${s.kind}/${q(s.key)}`;
}

/** Rows of one query in each of the thread objects named (or the visitor's home). */
async function stored(threads: string | string[], query: string, ...args: unknown[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const t of Array.isArray(threads) ? threads : [threads])
    out.push(await runInDurableObject(stubFor(t), (_o, state) => state.storage.sql.exec(query, ...(args as SqlStorageValue[])).toArray()));
  return out;
}

/**
 * The visitor uploads a file (PNG by its signature; the marker in its bytes and its name) and sends
 * it in a message; answers the message's id.
 */
async function attach(w: World, desk: WebDesk, v: Visitor, marker: string): Promise<string> {
  const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...new TextEncoder().encode(marker)]);
  const up = await dispatch(`${BASE}/api/channels/web/attachments?identity=${desk.identity}`, {
    method: "POST",
    headers: { origin: ORIGIN, cookie: v.cookie, "content-type": "image/png", "x-filename": `${marker}.png` },
    body: bytes,
  });
  const id = String(((await up.json()) as { data?: { attachment_id?: string } }).data?.attachment_id);
  expect(up.status).toBe(201);
  const sent = await call("POST", "/api/channels/web/messages", {
    body: { identity: desk.identity, text: "", attachments: [id] },
    headers: { origin: ORIGIN, cookie: v.cookie },
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  w.attachments.push({ visitor: v, id });
  w.markers.push(marker);
  return String(sent.body.data.message_id);
}

/** A conversation for `end`, written through the doors (see the file's comment). */
async function world(end: End): Promise<World> {
  const r = crypto.randomUUID().slice(0, 8);
  const desk = await webDesk();
  const asking = await askRoute();
  // A multichannel ask target: its callers are persons, so an erase reaches their questions.
  await call("PUT", "/api/conversation-configs/tool/ask_user", {
    key: await admin(),
    body: { target_kind: "tool", target_name: "ask_user", multichannel: true },
  });
  const w: World = {
    end,
    desk,
    ask: asking.name,
    markers: [`api-said-${r}`, `linked-said-${r}`, `asked-${r}`],
    visitors: [],
    threads: [],
    persons: [],
    messages: [],
    interactions: [],
    state: uniq("life").toLowerCase(),
    subjects: [],
    audience: `ops-${r}`,
    traces: new Set(),
    attachments: [],
  };
  const keep = (route: string, res: { body: any }) => {
    const d = res.body.data ?? {};
    if (d.thread_id && !w.threads.some((t) => t.thread === d.thread_id)) w.threads.push({ route, thread: d.thread_id });
    if (d.message_id) w.messages.push({ route, id: d.message_id });
  };

  // The person: an api caller, and a web visitor who opened the page with link params and linked.
  const ann = `ann-${r}`;
  const v = await newVisitor(desk, `?topic=param-${r}`);
  w.visitors.push(v);
  w.threads.push({ route: desk.web, thread: v.home });
  // Before linking, the visitor answers the identity's pre-chat form: the profile is kept with the
  // session, rides on the records, and is folded into the person (through the merge of the link).
  const answer = `profile-${r}`;
  const form = { fields: [{ name: "topic", label: "Topic", type: "text" }] };
  expect((await call("PUT", `/api/channels/web/sites/${desk.identity}/prechat`, { key: await admin(), body: form })).status).toBe(200);
  const answered = await call("POST", "/api/channels/web/messages", {
    body: { identity: desk.identity, text: "", profile: { topic: answer } },
    headers: { origin: ORIGIN, cookie: v.cookie },
  });
  expect(answered.status, JSON.stringify(answered.body)).toBe(200);
  w.messages.push({ route: desk.web, id: answered.body.data.message_id });
  await settled(v.home);
  const { person: personThread, before } = await link(desk, v, ann);
  w.threads.push({ route: desk.api, thread: before }, { route: desk.api, thread: personThread });
  w.persons.push(personThread.slice("bridge:@person:".length));
  keep(desk.api, await apiSay(desk, ann, w.markers[0]));
  const said = await say(desk, v, w.markers[1]);
  w.messages.push({ route: desk.web, id: said.body.data.message_id });
  // A file the visitor uploads and sends: its bytes and its name carry markers.
  const sentFile = await attach(w, desk, v, `attached-${r}`);
  w.messages.push({ route: desk.web, id: sentFile });
  await settled(personThread);
  w.markers.push(v.address, ann, `param-${r}`, answer);

  // A notification to the visitor, recorded in the feeds too.
  const notice = `notice-${r}`;
  const sent = await fetchWithEnv(
    { ...env, NOTIFICATIONS_FROM_WEB: desk.identity },
    new Request(`${BASE}/api/notifications`, {
      method: "POST",
      headers: { "x-api-key": await admin(), "content-type": "application/json" },
      body: JSON.stringify({ message: notice, channel: "web", recipient: v.address, audience: w.audience }),
    }),
  );
  expect(sent.status, await sent.clone().text()).toBe(200);
  w.markers.push(notice);

  // A question a turn asked, on a person's thread of the multichannel ask target (two api
  // callers linked into one person).
  const key0 = await admin();
  const bob = `bob-${r}`;
  const bob2 = `bob2-${r}`;
  const askSay = async (user: string, said: string, wait = 10) => {
    const res = await call("POST", `/api/conversations/${asking.name}/messages`, {
      key: key0,
      body: { external_user_id: user, text: said, wait_seconds: wait },
    });
    keep(asking.name, res);
    return res;
  };
  const minted = await askSay(bob, "/link");
  const bobCode = String(minted.body.data?.answer ?? "").match(/LINK-[A-Z0-9]{8}/)?.[0];
  expect(bobCode, JSON.stringify(minted.body)).toBeDefined();
  await askSay(bob2, must(bobCode, "bobCode"));
  const asked = await askSay(bob, w.markers[2], 0);
  const askThread = asked.body.data.thread_id as string;
  expect(askThread.startsWith("bridge:@person:"), askThread).toBe(true);
  const [pending] = await pendingOf(askThread);
  w.interactions.push(pending.interaction_id);
  w.persons.push(askThread.slice("bridge:@person:".length));
  w.markers.push(bob, bob2);

  // Someone else on their own thread (not a person's: an erase leaves it).
  if (end !== "erase") {
    const u = await newVisitor(desk);
    const own = `own-said-${r}`;
    const res = await say(desk, u, own);
    w.messages.push({ route: desk.web, id: res.body.data.message_id });
    w.messages.push({ route: desk.web, id: await attach(w, desk, u, `own-attached-${r}`) });
    w.visitors.push(u);
    w.threads.push({ route: desk.web, thread: u.home });
    await settled(u.home);
    w.markers.push(own, u.address);
  }

  // A state record about the conversation: its threads, and (for erase) its person.
  const key = await admin();
  const declared = await call("PUT", `/api/states/${w.state}`, {
    key,
    body: { schema: { type: "object", properties: { note: { type: "string" } } }, subject_kinds: ["thread", "person"], retention_days: 30 },
  });
  expect(declared.status, JSON.stringify(declared.body)).toBe(200);
  const note = `state-note-${r}`;
  w.subjects.push({ kind: "thread", key: personThread });
  if (end === "erase") w.subjects.push({ kind: "person", key: w.persons[0] });
  for (const s of w.subjects) {
    const put = await call("PUT", stateRecord(w.state, s), { key, body: { note } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  }
  w.markers.push(note);

  // The inbox state of every thread that holds a record: a label is the marker it carries. A claim
  // queues an `assigned` event for each route's events receiver, which keeps failing (503), so the
  // events stay queued in their threads (their thread ids carry the addresses).
  const receiver = "https://events.example.com/inbox";
  fakeNetwork((req) => (new URL(req.url).host === "events.example.com" ? new Response(null, { status: 503 }) : fetch(req)));
  for (const route of routesOf(w)) {
    const put = await call("PUT", `/api/conversations/${route}/inbox`, { key, body: { events_url: receiver } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  }
  const label = `inbox-${r}`;
  let labelled = 0;
  for (const t of w.threads) {
    const res = await call("POST", `/api/conversations/${t.route}/thread/labels`, { key, body: { thread_id: t.thread, add: [label] } });
    if (res.status === 200) labelled++;
    await call("POST", `/api/conversations/${t.route}/thread/claim`, { key, body: { thread_id: t.thread } });
  }
  expect(labelled).toBeGreaterThan(0);
  w.markers.push(label);

  // A private note on every thread that holds a record: its text is the marker.
  const noted = `private-note-${r}`;
  let notes = 0;
  for (const t of w.threads) {
    const res = await call("POST", `/api/conversations/${t.route}/thread/notes`, { key, body: { thread_id: t.thread, text: noted } });
    if (res.status === 201) notes++;
  }
  expect(notes).toBeGreaterThan(0);
  w.markers.push(noted);

  for (const t of w.threads) await settled(t.thread).catch(() => undefined);
  await listingCaughtUp(...w.threads.map((t) => t.thread));
  return w;
}

/** Applies `w.end` through its door, or runs the clocks out and the prune passes. */
async function applyEnd(w: World): Promise<void> {
  const key = await admin();
  if (w.end === "forget") {
    for (const t of w.threads) {
      const res = await eventually(
        () => call("DELETE", `/api/conversations/${t.route}/thread?thread_id=${q(t.thread)}`, { key }),
        (x) => x.status !== 409,
      );
      expect([t.thread, res.status, res.body]).toEqual([t.thread, 200, expect.anything()]);
    }
  } else if (w.end === "erase") {
    for (const p of w.persons) {
      const res = await call("DELETE", `/api/conversations/persons/${p}`, { key });
      expect([p, res.status]).toEqual([p, 200]);
    }
  } else {
    // The question is closed, so its retention can start.
    for (const id of w.interactions) await call("POST", `/api/interactions/${id}/cancel`, { key, body: {} });
    for (const t of w.threads) {
      // Provisional web deliveries end (their receipt grace made due): the records' retention starts.
      await makeDue(t.thread, "grace_until");
      await runAlarm(t.thread);
    }
    // The answer retention (1 s) runs out in real time: every record reads 404.
    for (const m of w.messages) {
      const gone = await eventually(
        () => readRecord(m.route, m.id),
        (x) => x.status === 404,
        250,
      );
      expect([m.id, gone.status]).toEqual([m.id, 404]);
    }
    // The other clocks are minutes or days long: their stored expiries are run out.
    for (const t of w.threads) {
      await runInDurableObject(stubFor(t.thread), (_o, state) => {
        state.storage.sql.exec("UPDATE checkpoint_threads SET expires_at = 1 WHERE expires_at IS NOT NULL");
        state.storage.sql.exec("UPDATE web_session SET expires_at = 1");
      });
      await (stubFor(t.thread) as any).checkpointRead(t.thread);
      await runAlarm(t.thread);
    }
    // The ledger's own windows (the inbound dedupe window, outbound ids' grace) run out too.
    for (let i = 0; i < SHARD_COUNT; i++)
      await runInDurableObject(shardStub(env, i) as unknown as DurableObjectStub, (_o, state) => {
        state.storage.sql.exec("UPDATE ledger SET expires_at = 1 WHERE expires_at IS NOT NULL");
      });
    const far = Date.now() + 400 * 24 * 3600 * 1000;
    for (const id of w.interactions) await stepAt(id, far);
    await runInDurableObject(env.STATE_STORES.get(env.STATE_STORES.idFromName(w.state)), (_o, s) => {
      s.storage.sql.exec("UPDATE records SET expires_at = 1 WHERE expires_at IS NOT NULL");
    });
    expect((await call("POST", "/api/state-retention/prune", { key })).status).toBe(200);
    await listingCaughtUp(...w.threads.map((t) => t.thread));
  }
  await Promise.all(allShards(env).map((s) => s.flush()));
}

const holdsNothing = (c: DataCopy) => c.holds.startsWith("nothing");

describe("the declared copies", () => {
  it("each has a fixture, and each fixture names a copy", () => {
    const names = DATA_COPIES.map((c) => c.name);
    expect(names.filter((n) => !(n in FIXTURES))).toEqual([]);
    expect(Object.keys(FIXTURES).filter((n) => !names.includes(n))).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
  });

  it("each declares how every end reaches it, with settings for an expiry that has one", () => {
    for (const c of DATA_COPIES)
      for (const end of ENDS) {
        expect([c.name, end, c[end].how.length > 0]).toEqual([c.name, end, true]);
        if (c[end].kind === "none" && !holdsNothing(c)) expect([c.name, end, c[end].how]).not.toContain("");
      }
  });
});

const figures = { copies: DATA_COPIES.length, ends: ENDS.length, cases: 0, reached: 0, declaredKept: 0 };

for (const end of ENDS) {
  describe(`${end}`, () => {
    let w: World;
    const before = new Map<string, string>();

    beforeAll(async () => {
      if (end === "retention") await setSettings({ CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS: "1", LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "1" });
      w = await world(end);
      for (const c of DATA_COPIES) before.set(c.name, await FIXTURES[c.name](w));
      await applyEnd(w);
    }, 120_000);

    afterAll(async () => {
      if (end === "retention") await unsetSettings(["CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS", "LLM_PROVIDER_CHECKPOINT_TTL_MINUTES"]);
    });

    for (const c of DATA_COPIES) {
      it(`${c.name}: ${c[end].kind}`, async () => {
        figures.cases++;
        const seenBefore = leaks(must(before.get(c.name), "before.get(c.name)"), w);
        // Written through: the copy showed the conversation before the end (a copy that holds
        // nothing, or is never stored, shows nothing either time).
        if (holdsNothing(c) || c[end].kind === "ends") expect([c.name, seenBefore]).toEqual([c.name, []]);
        // With a one-second retention a copy may be gone before this first read; the retention
        // world is written like the other two, whose first reads saw every copy.
        else if (end !== "retention") expect([c.name, seenBefore.length > 0]).toEqual([c.name, true]);
        const after = leaks(await FIXTURES[c.name](w), w);
        if (c[end].kind === "none" && !holdsNothing(c)) {
          // Declared out of this end's reach (with its reason): it still shows it.
          figures.declaredKept++;
          expect([c.name, after.length > 0]).toEqual([c.name, true]);
        } else {
          figures.reached++;
          expect([c.name, end, after], after.length ? await FIXTURES[c.name](w) : "").toEqual([c.name, end, []]);
        }
      });
    }
  });
}

describe("figures", () => {
  it("prints the suite's figures", () => {
    console.log(
      `data-lifetime: ${figures.copies} copies × ${figures.ends} ends = ${figures.cases} cases; ${figures.reached} reached (nothing readable after), ${figures.declaredKept} declared kept`,
    );
    expect(figures.cases).toBe(figures.copies * figures.ends);
  });
});
