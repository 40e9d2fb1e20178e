/**
 * Private notes (docs/inbox.md, "Private notes"), through the real doors and the thread object:
 * write, read and delete (its author or an admin), the per-thread cap, expiry by the thread's
 * alarm, forget, the transcript's `include_notes`, the `note_added` event, and the agent's memory
 * only when the route's inbox policy opts in.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_NOTES_PER_THREAD } from "../../src/conversations/model/notes";
import { noteMemoryText } from "../../src/conversations/operator/notes";
import { ThreadNotes } from "../../src/conversations/thread/notes";
import type { InboxEvent } from "../../src/conversations/thread/inbox";
import { migrate } from "../../src/conversations/thread/store";
import type { Settings } from "../../src/platform/settings/settings";
import { flushListings } from "../../src/shards/listing-table";
import { createRoute, echoKey, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { inScratchObject } from "../helpers/object-schema";
import { eventually, makeDue, runAlarm, stubFor } from "../helpers/threads";

const enc = encodeURIComponent;

/** A route and one answered customer message on it: a thread with a record. */
async function threadOn(extra: Record<string, unknown> = {}) {
  const k = await echoKey();
  const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, ...extra });
  const sent = await send(route.name, { external_user_id: uniq("cust"), text: "my parcel is late", wait_seconds: 10 });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return { route: route.name, threadId: sent.body.data.thread_id as string };
}

async function write(route: string, threadId: string, text: string, key?: string) {
  return call("POST", `/api/conversations/${route}/thread/notes`, { key: key ?? (await admin()), body: { thread_id: threadId, text } });
}

async function read(route: string, threadId: string, key?: string) {
  return call("GET", `/api/conversations/${route}/thread/notes?thread_id=${enc(threadId)}`, { key: key ?? (await admin()) });
}

async function remove(route: string, threadId: string, noteId: string, key?: string) {
  return call("DELETE", `/api/conversations/${route}/thread/notes/${noteId}?thread_id=${enc(threadId)}`, { key: key ?? (await admin()) });
}

/** The notes table as stored, expired rows included. */
async function storedNotes(threadId: string): Promise<Array<{ id: string; author: string; text: string; expires_at: number }>> {
  return runInDurableObject(
    stubFor(threadId),
    (_o, state) => state.storage.sql.exec("SELECT id, author, text, expires_at FROM notes ORDER BY seq").toArray() as never,
  );
}

async function operator() {
  return mintKey({ scopes: ["conversations"] });
}

async function memoryOf(threadId: string): Promise<Array<{ role: string; content: string | null }>> {
  return (stubFor(threadId) as unknown as { checkpointRead(id: string): Promise<Array<{ role: string; content: string | null }>> }).checkpointRead(threadId);
}

describe("private notes", () => {
  it("are written (201), read back oldest first, and carry their author and expiry", async () => {
    const { route, threadId } = await threadOn();
    const sam = await operator();
    const first = await write(route, threadId, "  refund approved by finance  ", sam.key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data).toMatchObject({ thread_id: threadId, by: sam.user_id, text: "refund approved by finance" });
    const { created_at, expires_at } = first.body.data;
    // CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS's default: 30 days.
    expect(Date.parse(expires_at) - Date.parse(created_at)).toBe(2_592_000_000);
    expect((await write(route, threadId, "customer prefers email")).status).toBe(201);

    const listed = await read(route, threadId, sam.key);
    expect(listed.status).toBe(200);
    expect(listed.body.data.thread_id).toBe(threadId);
    expect(listed.body.data.notes.map((n: { text: string }) => n.text)).toEqual(["refund approved by finance", "customer prefers email"]);
    expect(listed.body.data.notes[0]).toEqual(first.body.data);
  });

  it("are refused blank, too long, with unknown fields, off the route, and on a thread with no record", async () => {
    const { route, threadId } = await threadOn();
    const other = await threadOn();
    expect((await write(route, threadId, "   ")).status).toBe(400);
    expect((await write(route, threadId, "x".repeat(4001))).status).toBe(400);
    expect((await write(route, threadId, "x".repeat(4000))).status).toBe(201);
    const extra = await call("POST", `/api/conversations/${route}/thread/notes`, { key: await admin(), body: { thread_id: threadId, text: "x", pin: true } });
    expect(extra.status).toBe(400);
    expect((await write(other.route, threadId, "wrong route")).status).toBe(400);
    expect((await read(other.route, threadId)).status).toBe(400);
    const nobody = `bridge:${route}:nobody-${uniq("x")}`;
    expect((await write(route, nobody, "hello?")).status).toBe(404);
    expect((await read(route, nobody)).status).toBe(404);
    expect((await remove(route, nobody, crypto.randomUUID())).status).toBe(404);
    expect((await read(route, `bridge:@person:${crypto.randomUUID()}`)).status).toBe(404);
  });

  it("are deleted only by their author or an admin", async () => {
    const { route, threadId } = await threadOn();
    const sam = await operator();
    const kim = await operator();
    const samNote = (await write(route, threadId, "sam's", sam.key)).body.data.note_id as string;
    const kimNote = (await write(route, threadId, "kim's", kim.key)).body.data.note_id as string;

    const refused = await remove(route, threadId, samNote, kim.key);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("not_note_author");
    const own = await remove(route, threadId, samNote, sam.key);
    expect(own.status).toBe(200);
    expect(own.body.data).toEqual({ thread_id: threadId, note_id: samNote, deleted: true });
    expect((await remove(route, threadId, samNote, sam.key)).status).toBe(404);
    expect((await remove(route, threadId, kimNote)).status).toBe(200);
    expect((await read(route, threadId)).body.data.notes).toEqual([]);
  });

  it("a mine-only key neither reads nor writes the notes of a thread another operator holds", async () => {
    const { route, threadId } = await threadOn({ initial_mode: "manual" });
    const kim = await operator();
    const mineOnly = await mintKey({ scopes: ["conversations"], condition: ".thread == null or .thread.assignee == null or .thread.assignee == .sub" });
    expect((await write(route, threadId, "before the claim", mineOnly.key)).status).toBe(201);
    expect((await call("POST", `/api/conversations/${route}/thread/claim`, { key: kim.key, body: { thread_id: threadId } })).status).toBe(200);
    expect((await write(route, threadId, "after the claim", mineOnly.key)).status).toBe(403);
    expect((await read(route, threadId, mineOnly.key)).status).toBe(403);
    const transcript = await call("GET", `/api/conversations/${route}/transcript?thread_id=${enc(threadId)}&include_notes=true`, { key: mineOnly.key });
    expect(transcript.status).toBe(403);
    expect((await read(route, threadId, kim.key)).body.data.notes).toHaveLength(1);
  });

  it(`a thread keeps at most ${MAX_NOTES_PER_THREAD} live notes: the next is 409 until one goes`, async () => {
    const { route, threadId } = await threadOn();
    expect((await write(route, threadId, "the first")).status).toBe(201);
    // The rest written in storage directly: the cap is what is counted, not how notes arrived.
    await runInDurableObject(stubFor(threadId), (_o, state) => {
      const until = Date.now() + 3600_000;
      for (let i = 1; i < MAX_NOTES_PER_THREAD; i++)
        state.storage.sql.exec(
          "INSERT INTO notes (id, author, text, created_at, expires_at) VALUES (?, 'root', ?, ?, ?)",
          `n-${i}`,
          `note ${i}`,
          Date.now(),
          until,
        );
    });
    const full = await write(route, threadId, "one too many");
    expect(full.status).toBe(409);
    expect(full.body.code).toBe("notes_full");
    expect((await read(route, threadId)).body.data.notes).toHaveLength(MAX_NOTES_PER_THREAD);
    expect((await remove(route, threadId, "n-7")).status).toBe(200);
    expect((await write(route, threadId, "room again")).status).toBe(201);
    // An expired note no longer counts.
    await runInDurableObject(stubFor(threadId), (_o, state) => state.storage.sql.exec("UPDATE notes SET expires_at = ? WHERE id = 'n-8'", Date.now() - 1000));
    expect((await write(route, threadId, "and again")).status).toBe(201);
    expect((await write(route, threadId, "but not twice")).status).toBe(409);
  });

  it("expire with the answer retention from their write: reads treat them as gone, the thread's alarm prunes them", async () => {
    const { route, threadId } = await threadOn();
    const note = (await write(route, threadId, "expire me")).body.data;
    const kept = (await write(route, threadId, "keep me")).body.data;
    // The note's expiry is one of the alarm's instants: with the records' own expiry out of the
    // way (no inbox timer on an agent route) and the listing's outbox pushed, the alarm is armed at it.
    await eventually(
      () => runInDurableObject(stubFor(threadId), (_o, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM index_outbox").one().n),
      (n) => n === 0,
    );
    await runInDurableObject(stubFor(threadId), (_o, state) => state.storage.sql.exec("UPDATE records SET expires_at = NULL"));
    await runAlarm(threadId);
    const armed = await runInDurableObject(stubFor(threadId), (_o, state) => state.storage.getAlarm());
    expect(armed).toBe(Date.parse(note.expires_at));

    // The note's clock runs out (its stored instant rewritten into the past).
    await runInDurableObject(stubFor(threadId), (_o, state) =>
      state.storage.sql.exec("UPDATE notes SET expires_at = ? WHERE id = ?", Date.now() - 1000, note.note_id),
    );
    expect((await read(route, threadId)).body.data.notes.map((n: { note_id: string }) => n.note_id)).toEqual([kept.note_id]);
    expect((await remove(route, threadId, note.note_id)).status).toBe(404);
    expect((await storedNotes(threadId)).map((n) => n.id)).toEqual([note.note_id, kept.note_id]);
    await runAlarm(threadId);
    expect((await storedNotes(threadId)).map((n) => n.id)).toEqual([kept.note_id]);
  });

  it("go with the thread's last record when retention prunes it", async () => {
    const { route, threadId } = await threadOn();
    expect((await write(route, threadId, "about a conversation that ends")).status).toBe(201);
    await makeDue(threadId, "expires_at");
    await runAlarm(threadId);
    expect(await storedNotes(threadId)).toEqual([]);
    expect((await read(route, threadId)).status).toBe(404);
  });

  it("go with thread forget", async () => {
    const { route, threadId } = await threadOn();
    expect((await write(route, threadId, "forget me too")).status).toBe(201);
    const f = await call("DELETE", `/api/conversations/${route}/thread?thread_id=${enc(threadId)}`, { key: await admin() });
    expect(f.status).toBe(200);
    expect(await storedNotes(threadId)).toEqual([]);
    expect((await read(route, threadId)).status).toBe(404);
  });

  it("ride along the transcript only with include_notes=true; its default answer keeps the spec's shape", async () => {
    const { route, threadId } = await threadOn();
    const note = (await write(route, threadId, "seen in the transcript")).body.data;
    const key = await admin();
    const plain = await call("GET", `/api/conversations/${route}/transcript?thread_id=${enc(threadId)}`, { key });
    expect(plain.status).toBe(200);
    expect(Object.keys(plain.body.data).sort()).toEqual(["items", "next_page", "order", "page", "page_size", "total", "truncated"]);
    const off = await call("GET", `/api/conversations/${route}/transcript?thread_id=${enc(threadId)}&include_notes=false`, { key });
    expect(off.body.data).not.toHaveProperty("notes");
    const withNotes = await call("GET", `/api/conversations/${route}/transcript?thread_id=${enc(threadId)}&include_notes=true&pageSize=1`, { key });
    expect(withNotes.status).toBe(200);
    expect(withNotes.body.data.items).toHaveLength(1);
    expect(withNotes.body.data.notes).toEqual([note]);
    expect((await call("GET", `/api/conversations/${route}/transcript?thread_id=${enc(threadId)}&include_notes=yes`, { key })).status).toBe(400);
  });

  it("emit note_added (counted per route) without their text", async () => {
    const { route, threadId } = await threadOn();
    expect((await write(route, threadId, "counted")).status).toBe(201);
    expect((await write(route, threadId, "counted again")).status).toBe(201);
    const counted = await eventually(
      async () => {
        await flushListings(env);
        return env.DB.prepare("SELECT SUM(value) AS n FROM run_counters WHERE name = 'inbox_note_added' AND label = ?")
          .bind(route)
          .first<{ n: number | null }>();
      },
      (row) => row?.n === 2,
    );
    expect(counted?.n).toBe(2);

    // The event itself: the note's id and author, never its text.
    const events = await inScratchObject((_sql, storage) => {
      migrate(storage);
      const told: InboxEvent[] = [];
      const notes = new ThreadNotes(
        { storage, clock: { now: () => 1_000 }, settings: () => ({ conversations: { answerRetentionTtlSeconds: 60 } }) as Settings },
        { inbox: { emit: (e) => told.push(...e) }, holdsRecords: () => true },
      );
      const r = notes.add("support", "sam", "a secret between operators");
      return { told, id: r.ok ? r.note.id : null, expires: r.ok ? r.note.expires_at : null };
    });
    expect(events.told).toEqual([{ kind: "note_added", at: 1_000, route_name: "support", by: "sam", detail: { note_id: events.id, by: "sam" } }]);
    expect(events.expires).toBe(61_000);
    expect(JSON.stringify(events.told)).not.toContain("secret");
  });

  describe("and the agent's memory", () => {
    async function agentThread() {
      const k = await echoKey();
      const route = await createRoute({ door: "api", target_kind: "agent", target_name: "echo", execution_key: k.user_id });
      const sent = await send(route.name, { external_user_id: uniq("cust"), text: "hello agent", wait_seconds: 10 });
      expect(sent.body.data.status, JSON.stringify(sent.body)).toBe("answered");
      return { route: route.name, threadId: sent.body.data.thread_id as string };
    }

    it("never joins it without the route's opt-in", async () => {
      const { route, threadId } = await agentThread();
      const before = await memoryOf(threadId);
      expect(before.length).toBeGreaterThan(0);
      expect((await write(route, threadId, "not for the agent")).status).toBe(201);
      expect(await memoryOf(threadId)).toEqual(before);
      // An explicit opt-out reads the same.
      expect((await call("PUT", `/api/conversations/${route}/inbox`, { key: await admin(), body: { notes_in_agent_memory: false } })).status).toBe(200);
      expect((await write(route, threadId, "still not")).status).toBe(201);
      expect(JSON.stringify(await memoryOf(threadId))).not.toContain("not for the agent");
      expect(JSON.stringify(await memoryOf(threadId))).not.toContain("still not");
    });

    it("joins it as a system message when the route's inbox policy opts in, and the next turn runs with it", async () => {
      const { route, threadId } = await agentThread();
      expect((await call("PUT", `/api/conversations/${route}/inbox`, { key: await admin(), body: { notes_in_agent_memory: true } })).status).toBe(200);
      expect((await write(route, threadId, "VIP customer, be generous")).status).toBe(201);
      const memory = await memoryOf(threadId);
      expect(memory.at(-1)).toEqual({ role: "system", content: noteMemoryText("VIP customer, be generous") });
      expect(memory.at(-1)?.content).toContain("[operator note");
      // The memory with a note in it still serves the agent's next turn.
      const next = await send(route, { external_user_id: threadId.split("/").at(-1), text: "again", wait_seconds: 10 });
      expect(next.body.data.status).toBe("answered");
      // The note is not in the transcript's records: it was never a message.
      const transcript = await call("GET", `/api/conversations/${route}/transcript?thread_id=${enc(threadId)}`, { key: await admin() });
      expect(JSON.stringify(transcript.body)).not.toContain("VIP customer");
    });

    it("a tool route never puts a note in memory, opted in or not", async () => {
      const { route, threadId } = await threadOn();
      expect((await call("PUT", `/api/conversations/${route}/inbox`, { key: await admin(), body: { notes_in_agent_memory: true } })).status).toBe(200);
      expect((await write(route, threadId, "tools keep no memory")).status).toBe(201);
      expect(JSON.stringify(await memoryOf(threadId))).not.toContain("tools keep no memory");
    });

    it("a failed append answers 503 and keeps no note", async () => {
      const { route, threadId } = await agentThread();
      expect((await call("PUT", `/api/conversations/${route}/inbox`, { key: await admin(), body: { notes_in_agent_memory: true } })).status).toBe(200);
      await runInDurableObject(stubFor(threadId), (_o, state) => {
        state.storage.sql.exec("DROP TABLE checkpoint_messages");
        state.storage.sql.exec("CREATE TABLE checkpoint_messages (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, message TEXT NOT NULL CHECK (0))");
      });
      const res = await write(route, threadId, "lost on the way");
      expect(res.status).toBe(503);
      expect(res.body.code).toBe("agent_memory_unavailable");
      expect((await read(route, threadId)).body.data.notes).toEqual([]);
    });
  });
});
