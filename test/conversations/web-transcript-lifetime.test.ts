/**
 * The web page's transcript is a copy of records, and dies with them (docs/security.md "Every
 * copy of a conversation"): forgetting a linked person's thread reaches the entries its records
 * left in the visitor's own thread and ends that session; an entry expires with its record's
 * retention, whichever thread the record lives on.
 */
import { afterEach, describe, expect, it } from "vitest";
import { readRecord } from "../helpers/bridge";
import { admin, call } from "../helpers/http";
import { eventually, rawRows, runAlarm } from "../helpers/threads";
import {
  type Visitor,
  type WebDesk,
  deliverAll,
  link,
  newVisitor,
  openStream,
  replayed,
  say,
  setSettings,
  settled,
  transcriptRows,
  unsetSettings,
  webDesk,
} from "../helpers/web-visitor";
import { must } from "../../src/platform/must";

async function linkedVisitor(): Promise<{ desk: WebDesk; v: Visitor; personThread: string }> {
  const desk = await webDesk({ tool: true });
  const v = await newVisitor(desk);
  const { person: personThread } = await link(desk, v, `ann-${crypto.randomUUID().slice(0, 6)}`);
  return { desk, v, personThread };
}

describe("forgetting a linked person's thread", () => {
  it("removes the forgotten records' entries from the visitor's page and ends its session; an open page is told", async () => {
    const { desk, v, personThread } = await linkedVisitor();
    const secret = `my card ends ${crypto.randomUUID().slice(0, 6)}`;
    expect((await say(desk, v, secret)).status).toBe(200);
    await settled(personThread);
    expect((await rawRows(personThread)).map((r) => JSON.parse(r.record).inbound_text)).toContain(secret);
    expect(await replayed(desk, v)).toEqual(expect.arrayContaining([secret, `tool saw ${secret}`]));
    const watching = await openStream(desk, v);

    const forgot = await call("DELETE", `/api/conversations/${desk.web}/thread?thread_id=${encodeURIComponent(personThread)}`, { key: await admin() });
    expect(forgot.status, JSON.stringify(forgot.body)).toBe(200);
    expect(forgot.body.data.removed).toBeGreaterThan(0);

    await eventually(
      async () => watching.frames,
      (f) => f.some((x) => x.type === "ended"),
    );
    expect(watching.frames.at(-1)).toEqual({ type: "ended" });
    // Nothing replays, the session is over, and the stored copy is gone.
    expect((await openStream(desk, v)).status).toBe(401);
    expect((await say(desk, v, "still there?")).status).toBe(401);
    const left = (await transcriptRows(v.home)).map((r) => r.text);
    expect(left.filter((t) => t.includes(secret))).toEqual([]);
    // A new page load starts afresh and shows nothing of it.
    const again = await newVisitor(desk);
    expect((await replayed(desk, again)).filter((t) => t.includes(secret))).toEqual([]);
  }, 60_000);
});

/**
 * The answer retention these tests set: long enough that a loaded machine still reads the delivered
 * record before it expires, short enough to wait for.
 */
const RETENTION_S = 3;

/** Waits until the record's read door answers 404 (its retention ended). */
async function expired(route: string, messageId: string): Promise<void> {
  const gone = await eventually(
    () => readRecord(route, messageId),
    (r) => r.status === 404,
    (RETENTION_S + 5) * 50,
  );
  expect(gone.status).toBe(404);
}

describe("the answer retention", () => {
  afterEach(async () => unsetSettings(["CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS"]));

  it("ends a visitor's page copy with the record, on the visitor's own thread", async () => {
    const desk = await webDesk({ tool: true });
    const v = await newVisitor(desk);
    await setSettings({ CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS: String(RETENTION_S) });
    const sent = await say(desk, v, "short lived");
    expect(sent.status).toBe(200);
    await settled(v.home);
    await deliverAll(v.home);
    const rec = must(
      (await rawRows(v.home)).find((r) => r.message_id === sent.body.data.message_id),
      "the item found",
    );
    expect(rec.status).toBe("delivered");
    expect((await readRecord(desk.web, rec.message_id)).status).toBe(200);
    const entries = (await transcriptRows(v.home)).filter((r) => r.message_id === rec.message_id);
    // Once the record has expired (its read door answers 404), the page replays nothing of it.
    await expired(desk.web, rec.message_id);
    expect(await replayed(desk, v)).not.toContain("short lived");
    // Each entry of the record carried the record's own expiry, and the alarm's pass deletes them.
    expect(entries.map((e) => e.expires_at)).toEqual([rec.expires_at, rec.expires_at]);
    await runAlarm(v.home);
    expect((await transcriptRows(v.home)).filter((r) => r.message_id === rec.message_id)).toEqual([]);
  }, 60_000);

  it("ends the page copy of a linked person's record in the visitor's own thread", async () => {
    const { desk, v, personThread } = await linkedVisitor();
    await setSettings({ CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS: String(RETENTION_S) });
    const text = `linked and short ${crypto.randomUUID().slice(0, 6)}`;
    const sent = await say(desk, v, text);
    await settled(personThread);
    await deliverAll(personThread);
    const rec = must(
      (await rawRows(personThread)).find((r) => r.message_id === sent.body.data.message_id),
      "the item found",
    );
    expect(rec.status).toBe("delivered");
    expect((await readRecord(desk.web, rec.message_id)).status).toBe(200);
    const entries = (await transcriptRows(v.home)).filter((r) => r.message_id === rec.message_id);
    await expired(desk.web, rec.message_id);
    expect((await replayed(desk, v)).filter((t) => t.includes(text))).toEqual([]);
    expect(entries.map((e) => e.expires_at)).toEqual([rec.expires_at, rec.expires_at]);
    await runAlarm(v.home);
    expect((await transcriptRows(v.home)).filter((r) => r.message_id === rec.message_id)).toEqual([]);
  }, 60_000);
});
