import { afterEach, describe, expect, it, vi } from "vitest";
import { createRoute, echoKey, send } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { postTwilio } from "../helpers/webhooks";
import { uniq } from "../helpers/http";
import { eventually, makeDue, rawRows, runAlarm } from "../helpers/threads";

const HOOK = "https://hooks.example.com/delivery-log?token=SECRET-IN-URL";

/** Captures the structured delivery lines the thread objects print (they share this isolate's console). */
function captureAttemptLines() {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const spy = vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => {
    const text = args.map(String).join(" ");
    raw.push(text);
    if (text.startsWith('{"event":"delivery_attempt_failed"')) lines.push(JSON.parse(text) as Record<string, unknown>);
  });
  return { lines, raw, spy };
}

afterEach(() => vi.restoreAllMocks());

const attemptsOf = async (threadId: string, messageId: string) => {
  const row = (await rawRows(threadId)).find((r) => r.message_id === messageId);
  return row ? { attempts: JSON.parse(row.record).attempts as number, leased: row.delivery_lease_until !== null, status: row.status } : null;
};

describe("a failed delivery attempt logs one structured line", () => {
  it("a failed callback attempt logs one JSON line with the message id, attempt and a short reason, never the URL", async () => {
    const { lines, raw } = captureAttemptLines();
    let answer = 0;
    fakeNetwork(() => {
      answer++;
      if (answer === 1) return new Response("busy", { status: 503 });
      throw new TypeError("Network connection lost."); // the transport fails on the retry
    });
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, callback_url: HOOK });
    const a = await send(r.name, { external_user_id: "log", text: "private words" });
    const { message_id, thread_id } = a.body.data;
    await eventually(
      () => attemptsOf(thread_id, message_id),
      (x) => x?.attempts === 1 && !x.leased,
    );
    await makeDue(thread_id, "delivery_due_at");
    await runAlarm(thread_id);
    await eventually(
      () => attemptsOf(thread_id, message_id),
      (x) => x?.attempts === 2 && !x.leased,
    );

    const mine = lines.filter((l) => l.message_id === message_id);
    expect(mine).toEqual([
      { event: "delivery_attempt_failed", message_id, via: "callback", attempt: 1, reason: "http_503", final: false },
      { event: "delivery_attempt_failed", message_id, via: "callback", attempt: 2, reason: "transport", final: false },
    ]);
    const printed = raw.filter((t) => t.includes(message_id)).join("\n");
    expect(printed).not.toContain("hooks.example.com");
    expect(printed).not.toContain("SECRET-IN-URL");
    expect(printed).not.toContain("private words");
    expect(printed).not.toContain("Network connection lost");
  });

  it("the attempt that ends the delivery says so (final: true)", async () => {
    const { lines } = captureAttemptLines();
    fakeNetwork(() => new Response(null, { status: 500 }));
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, callback_url: HOOK });
    const a = await send(r.name, { external_user_id: "log2", text: "x" });
    const { message_id, thread_id } = a.body.data;
    for (let attempt = 1; attempt < 8; attempt++) {
      await eventually(
        () => attemptsOf(thread_id, message_id),
        (x) => x?.attempts === attempt && !x.leased,
      );
      await makeDue(thread_id, "delivery_due_at");
      await runAlarm(thread_id);
    }
    await eventually(
      () => attemptsOf(thread_id, message_id),
      (x) => x?.status === "failed",
    );
    const mine = lines.filter((l) => l.message_id === message_id);
    expect(mine.map((l) => [l.attempt, l.final])).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((n) => [n, n === 8]));
  });

  it("a failed channel send attempt logs one line naming the channel and the provider's HTTP status class", async () => {
    const { lines } = captureAttemptLines();
    fakeNetwork((req) =>
      new URL(req.url).host === "twilio.fake" ? Response.json({ code: 20500, message: "internal" }, { status: 500 }) : new Response(null, { status: 599 }),
    );
    const ours = `+1555${String(Date.now()).slice(-7)}`;
    const them = `+1556${String(Date.now()).slice(-7)}`;
    const k = await echoKey();
    const r = await createRoute({ door: "channel", channel: "twilio", our_identity: ours, target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    expect((await postTwilio({ MessageSid: `SM${uniq("l")}`, From: them, To: ours, Body: "hello", NumMedia: "0" })).status).toBe(204);
    const threadId = `bridge:${r.name}:${them}`;
    const rows = await eventually(
      () => rawRows(threadId),
      (x) => x[0] !== undefined && JSON.parse(x[0].record).attempts === 1 && x[0].delivery_lease_until === null,
    );
    const messageId = rows[0].message_id;
    expect(lines.filter((l) => l.message_id === messageId)).toEqual([
      { event: "delivery_attempt_failed", message_id: messageId, via: "twilio", attempt: 1, reason: "http_500", final: false },
    ]);
  });
});
