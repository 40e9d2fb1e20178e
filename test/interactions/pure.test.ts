/**
 * The interactions area's pure rules: ask_user's input, options and their matching,
 * the question's shape per channel, answers, ends, the alarm's next instant, tickets, the ring,
 * visibility and the result a resumed run reads.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { adapterFor } from "../../src/channels/registry";
import { AskUserInput, effectiveOptions, numberedQuestion, pickOption } from "../../src/interactions/ask";
import { appendEvents, dropInteractionEvents, eventsAfter, lastEventId, migrateRing, trimmedThrough } from "../../src/interactions/hub-ring";
import { answerOf, endedState, nextAlarm, resumeOwed } from "../../src/interactions/lifecycle";
import type { InteractionRow } from "../../src/interactions/object-store";
import { questionAnswer } from "../../src/interactions/question";
import { type InteractionState, askResult, viewFor, visibleTo } from "../../src/interactions/record";
import { isTicketShaped, mintTicket, ticketExpiry } from "../../src/interactions/tickets";
import { resumedMessages } from "../../src/targets/agents/llm";
import { SKIPPED_CALL_RESULT } from "../../src/shared/parked-run";
import { mintResume } from "../../src/conversations/thread/interaction-turns";
import { isResumeInbound, resumedInteractionId } from "../../src/conversations/thread/parked";

const OPTIONS = effectiveOptions([{ text: "Yes", id: "y" }, { text: "No" }, { text: "Maybe later", description: "ask again" }]);

const state = (over: Partial<InteractionState> = {}): InteractionState => ({
  interaction_id: "11111111-1111-4111-8111-111111111111",
  status: "pending",
  question: "Q?",
  options: OPTIONS,
  schema: null,
  audience: null,
  origin: { kind: "thread", route_name: "r", thread_id: "bridge:r:a", message_id: "m1", door: "api", channel: null },
  target: { kind: "tool", name: "ask_user" },
  created_at: "2026-01-01T00:00:00.000Z",
  expires_at: "2026-01-02T00:00:00.000Z",
  ended_at: null,
  answer: null,
  cancel_reason: null,
  reply_message_id: null,
  result: null,
  ...over,
});

describe("ask_user's input", () => {
  it("takes a question with options XOR a schema, an audience, and refuses by field", () => {
    expect(AskUserInput.safeParse({ question: "Q", options: [{ text: "a" }], audience: "ops.team" }).success).toBe(true);
    expect(AskUserInput.safeParse({ question: "Q", schema: { flow_id: "1" } }).success).toBe(true);
    const issues = (v: unknown) => (AskUserInput.safeParse(v).error?.issues ?? []).map((i) => `${i.path.join(".")}: ${i.message}`);
    expect(issues({ question: "  " })).toEqual(["question: must not be blank"]);
    expect(issues({ question: "Q", options: [{ text: "a" }], schema: { a: 1 } })).toEqual(["schema: options and schema are exclusive"]);
    expect(issues({ question: "Q", options: [] })).toEqual(["options: must not be empty"]);
    expect(issues({ question: "Q", options: [{ text: "a", id: "2" }, { text: "b" }] })).toEqual([
      "options: option ids must be unique (an option without id takes its position, 1-based)",
    ]);
    expect(issues({ question: "Q", schema: {} })).toEqual(["schema: must not be empty"]);
    expect(issues({ question: "Q", audience: "has space" })[0]).toMatch(/^audience: /);
    expect(issues({ question: "Q", extra: 1 })[0]).toMatch(/extra|Unrecognized/);
  });

  it("gives each option an effective id (the author's, else its position) and numbers them as text", () => {
    expect(OPTIONS).toEqual([
      { id: "y", text: "Yes" },
      { id: "2", text: "No" },
      { id: "3", text: "Maybe later", description: "ask again" },
    ]);
    expect(numberedQuestion("Q?", OPTIONS)).toBe("Q?\n\n1. Yes\n2. No\n3. Maybe later");
    expect(numberedQuestion("Q?", null)).toBe("Q?");
  });

  it("picks an option by a tap's reply_id (id or text), else by text, id or number; free text picks none", () => {
    expect(pickOption(OPTIONS, { replyId: "y" })?.text).toBe("Yes");
    expect(pickOption(OPTIONS, { replyId: "Maybe later" })?.id).toBe("3");
    expect(pickOption(OPTIONS, { text: "  no " })?.id).toBe("2");
    expect(pickOption(OPTIONS, { text: "Y" })?.text).toBe("Yes");
    expect(pickOption(OPTIONS, { text: "3" })?.text).toBe("Maybe later");
    expect(pickOption(OPTIONS, { text: "4" })).toBeNull();
    expect(pickOption(OPTIONS, { text: "perhaps" })).toBeNull();
    expect(pickOption(null, { text: "1" })).toBeNull();
  });
});

describe("the question on each door", () => {
  it("as reply options where the channel shows them, else numbered text; a form only where the channel has forms", () => {
    const telegram = questionAnswer(state(), adapterFor("telegram"));
    expect(telegram).toEqual({
      answer: "Q?",
      answer_part: {
        options: [
          { kind: "reply", text: "Yes", id: "y" },
          { kind: "reply", text: "No", id: "2" },
          { kind: "reply", text: "Maybe later", id: "3", description: "ask again" },
        ],
      },
    });
    expect(questionAnswer(state(), adapterFor("twilio"))).toEqual({ answer: "Q?\n\n1. Yes\n2. No\n3. Maybe later", answer_part: null });
    expect(questionAnswer(state(), undefined)).toEqual({ answer: "Q?\n\n1. Yes\n2. No\n3. Maybe later", answer_part: null });
    // Telegram's button data holds 64 bytes: a longer option falls back to text.
    const long = state({ options: effectiveOptions([{ text: "é".repeat(40) }]) });
    expect(questionAnswer(long, adapterFor("telegram")).answer_part).toBeNull();
    const form = state({ options: null, schema: { flow_id: "f1" } });
    expect(questionAnswer(form, adapterFor("whatsapp"))).toEqual({ answer: "Q?", answer_part: { schema: { flow_id: "f1" } } });
    expect(questionAnswer(form, adapterFor("telegram"))).toEqual({ answer: "Q?", answer_part: null });
  });
});

describe("answers and ends", () => {
  const by = { kind: "operator" as const, user_id: "op", message_id: null };
  it("an answer: explicit option ids must exist; text picks; the option's text stands in for a missing text", () => {
    expect(answerOf(state(), { option_id: "nope" }, by, "t")).toEqual({ ok: false });
    expect(answerOf(state(), { option_id: "2" }, by, "t")).toEqual({
      ok: true,
      answer: { text: "No", option: { id: "2", text: "No" }, form: null, params: null, media: null, location: null, answered_by: by, answered_at: "t" },
    });
    const tap = answerOf(state(), { text: "Yes", params: { reply_id: "Yes" } }, by, "t");
    expect(tap.ok && tap.answer).toMatchObject({ text: "Yes", option: { id: "y" }, params: { reply_id: "Yes" } });
    const form = answerOf(state({ options: null }), { form: { a: 1 }, params: {} }, by, "t");
    expect(form.ok && form.answer).toMatchObject({ text: null, option: null, form: { a: 1 }, params: null });
  });

  it("an end: status, instant, the answer or reason; what it owes the run by origin; the result the run reads", () => {
    const cancelled = endedState(state(), "cancelled", "t", { reason: "closed" });
    expect(cancelled).toMatchObject({ status: "cancelled", ended_at: "t", cancel_reason: "closed" });
    expect(askResult(cancelled)).toEqual({ interaction_id: cancelled.interaction_id, outcome: "cancelled", cancelled: true, reason: "closed" });
    expect(askResult(endedState(state(), "expired", "t"))).toEqual({ interaction_id: cancelled.interaction_id, outcome: "expired", timeout: true });
    expect(resumeOwed(state())).toBe("handoff");
    expect(resumeOwed(state({ origin: { kind: "agent_run", thread_id: "t1", caller: "u" } }))).toBe("run");
  });

  it("who sees it, and a failed result's detail only for admins", () => {
    // `since`: when the caller's key lineage began; this state was created at 2026-01-01.
    const before = "2025-12-31T00:00:00.000Z";
    expect(visibleTo(state(), { restricted: false, user_id: "any", since: before })).toBe(true);
    expect(visibleTo(state(), { restricted: true, user_id: "u", since: before })).toBe(false);
    expect(visibleTo(state({ audience: "u" }), { restricted: true, user_id: "u", since: before })).toBe(true);
    // Addressed to the user_id before the caller's key lineage began: another holder's, not its.
    expect(visibleTo(state({ audience: "u" }), { restricted: true, user_id: "u", since: "2026-01-02T00:00:00.000Z" })).toBe(false);
    expect(visibleTo(state({ audience: "u" }), { restricted: false, user_id: "u", since: "2026-01-02T00:00:00.000Z" })).toBe(true);
    const failed = state({
      result: { outcome: "error", text: null, error: "agent_error: detail", next_interaction_id: null, trace_id: null, finished_at: "t" },
    });
    expect(viewFor(failed, true).result?.error).toBe("agent_error: detail");
    expect(viewFor(failed, false).result?.error).toBe("the resumed run failed");
  });
});

describe("the object's next alarm", () => {
  const row = (over: Partial<InteractionRow> = {}): InteractionRow => ({
    state: state(),
    parked: null,
    expires_at: 10_000,
    purge_at: null,
    ticket_hash: null,
    ticket_expires_at: null,
    ticket_due: false,
    index_dirty: false,
    resume: "none",
    resume_message_id: null,
    resume_attempts: 0,
    ended_by: null,
    claimed_by: null,
    retry_at: null,
    ...over,
  });
  it("now for owed work (or its retry instant), the expiry while pending, the purge once ended", () => {
    expect(nextAlarm(row(), false, false, 100)).toBe(10_000);
    expect(nextAlarm(row({ index_dirty: true }), false, false, 100)).toBe(100);
    expect(nextAlarm(row(), true, false, 100)).toBe(100);
    expect(nextAlarm(row({ index_dirty: true, retry_at: 5000 }), false, false, 100)).toBe(5000);
    const ended = { state: state({ status: "answered" }), purge_at: 50_000 };
    expect(nextAlarm(row({ ...ended, resume: "handoff" }), false, false, 100)).toBe(100);
    expect(nextAlarm(row({ ...ended, resume: "run" }), false, true, 100)).toBe(100 + 15 * 60_000);
    expect(nextAlarm(row({ ...ended, resume: "done" }), false, false, 100)).toBe(50_000);
    expect(nextAlarm(row({ ...ended, resume: "done", purge_at: null }), false, false, 100)).toBeNull();
  });
});

describe("tickets", () => {
  it("itk- plus 43 url-safe characters, living at most until the interaction expires", () => {
    const t = mintTicket();
    expect(isTicketShaped(t)).toBe(true);
    expect(isTicketShaped(`${t}x`)).toBe(false);
    expect(mintTicket()).not.toBe(t);
    expect(ticketExpiry(1000, 60, 1_000_000)).toBe(61_000);
    expect(ticketExpiry(1000, 3600, 5000)).toBe(5000);
  });
});

describe("the resumed llm run's messages", () => {
  it("its own messages, the ask's result, and a fixed result for each call after the ask", () => {
    const fresh = [{ role: "user" as const, content: "hi" }];
    expect(resumedMessages({ fresh, call_id: "c2", skipped: [{ call_id: "c3", tool: "echo" }] }, '{"outcome":"answered"}')).toEqual([
      { role: "user", content: "hi" },
      { role: "tool", tool_call_id: "c2", name: "ask_user", content: '{"outcome":"answered"}' },
      { role: "tool", tool_call_id: "c3", name: "echo", content: JSON.stringify({ error: SKIPPED_CALL_RESULT }) },
    ]);
  });
});

describe("resume records", () => {
  it("are event-shaped records of the asking record's route, with source `interaction`", () => {
    const note = {
      interaction_id: "i1",
      asked_by: "m1",
      route: {
        route_name: "r",
        door: "channel" as const,
        channel: "telegram",
        our_identity: "bot",
        callback_url: null,
        client_address: "42",
        caller_principal: null,
      },
    };
    const { record, inbound } = mintResume(
      note,
      "bridge:r:42",
      { interaction_id: "i1", message_id: "m2", outcome: "expired", by: null },
      Date.parse("2026-01-01T00:00:00Z"),
    );
    expect(record).toMatchObject({
      message_id: "m2",
      route_name: "r",
      door: "channel",
      thread_id: "bridge:r:42",
      client_address: "42",
      channel: "telegram",
      our_identity: "bot",
      origin: "client",
      inbound_kind: "event",
      inbound_text: "",
      submitted_by: null,
      status: "accepted",
    });
    expect(record.inbound_event).toEqual({ id: "i1", kind: "interaction.expired", payload: { interaction_id: "i1", outcome: "expired" } });
    expect(isResumeInbound(inbound)).toBe(true);
    expect(resumedInteractionId(inbound)).toBe("i1");
    expect(isResumeInbound({ ...inbound, source: "event:x" })).toBe(false);
  });
});

describe("the event ring", () => {
  it("gives increasing ids, trims to its cap (remembering what it trimmed), filters by audience, drops on erasure", async () => {
    const stub = env.INTERACTION_HUB.get(env.INTERACTION_HUB.idFromName(`ring-${Date.now()}`));
    await runInDurableObject(stub, (_o, s) => {
      const sql = s.storage.sql;
      migrateRing(sql);
      const ev = (id: string, audience: string | null) => ({
        type: "interaction.created" as const,
        interaction_id: id,
        audience,
        at: "t",
        interaction: state({ interaction_id: id }),
      });
      appendEvents(sql, [ev("a", null), ev("b", "u1"), ev("c", null)], 10);
      expect(lastEventId(sql)).toBe(3);
      expect(eventsAfter(sql, 0, null, 10).map((e) => [e.id, e.interaction_id])).toEqual([
        [1, "a"],
        [2, "b"],
        [3, "c"],
      ]);
      expect(eventsAfter(sql, 0, "u1", 10).map((e) => e.id)).toEqual([2]);
      // A reader whose key lineage began after the interaction was created gets none of its events
      // (its state() was created at 2026-01-01): they were addressed to an earlier holder of "u1".
      expect(eventsAfter(sql, 0, "u1", 10, "2025-12-31T00:00:00.000Z").map((e) => e.id)).toEqual([2]);
      expect(eventsAfter(sql, 0, "u1", 10, "2026-01-02T00:00:00.000Z")).toEqual([]);
      appendEvents(sql, [ev("d", null), ev("e", null)], 3);
      expect(eventsAfter(sql, 0, null, 10).map((e) => e.id)).toEqual([3, 4, 5]);
      expect(trimmedThrough(sql)).toBe(2);
      expect(dropInteractionEvents(sql, ["d"])).toBe(1);
      expect(eventsAfter(sql, 0, null, 10).map((e) => e.id)).toEqual([3, 5]);
      // Ids are never reused, even after trims and drops.
      appendEvents(sql, [ev("f", null)], 10);
      expect(lastEventId(sql)).toBe(6);
    });
  });
});
