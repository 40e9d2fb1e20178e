/**
 * The Interaction object's verbs (src/interactions/rpc.ts): each is one read-decide-write
 * step on the row; whatever leaves the object is owed work for the alarm (src/interactions/alarm.ts).
 */
import type { AnswerInput, ClaimResult, CreateInteraction, InteractionChange } from "./rpc";
import { interactionHub } from "./rpc";
import type { JsonObject } from "../platform/http/bounded-json";
import type { ParkedRun } from "../shared/parked-run";
import { recordEnd } from "./ending";
import { deleteInteractionRow } from "./index-store";
import { run } from "../platform/persistence/d1";
import { answerOf, endedState, eventFor } from "./lifecycle";
import { deleteAnswerMedia, storeAnswerMedia } from "./media";
import { type InteractionKit, iso, isOpen, ticketLive } from "./object-kit";
import { asJsonObject, insertRow, queueEvent, readRow } from "./object-store";
import { type AnsweredBy, type InteractionState, askResult } from "./record";

export interface InteractionVerbs {
  create(req: CreateInteraction): Promise<InteractionState>;
  read(): InteractionState | null;
  answer(input: AnswerInput, by: AnsweredBy): Promise<InteractionChange>;
  cancel(by: string | null, reason: string | null): Promise<InteractionChange>;
  ticketView(hash: string): InteractionState | null;
  answerByTicket(hash: string, input: AnswerInput): Promise<InteractionChange>;
  claim(messageId: string, input: AnswerInput): Promise<ClaimResult>;
  resumeInput(): { parked: ParkedRun; result: JsonObject } | null;
  discard(): Promise<void>;
}

export function interactionVerbs(kit: InteractionKit): InteractionVerbs {
  const { sql, clock } = kit;

  /** Answers by door or ticket (`ticket`: the hash that must be live). */
  async function answerWith(input: AnswerInput, by: AnsweredBy, ticket: string | null): Promise<InteractionChange> {
    const now = clock.now();
    let row = readRow(sql);
    if (!row) return { ok: false, reason: "unknown" };
    if (ticket !== null && !ticketLive(row, ticket, now)) return { ok: false, reason: "bad_ticket" };
    if (!isOpen(row, now)) return { ok: false, reason: "not_pending" };
    const made = answerOf(row.state, input, by, iso(now));
    if (!made.ok) return { ok: false, reason: "bad_option" };
    const cfg = await kit.required();
    const media = input.attachments?.length ? await storeAnswerMedia(cfg.env, cfg.settings, kit.fetch, row.state, input.attachments) : null;
    row = readRow(sql);
    if (!row || !isOpen(row, clock.now()) || (ticket !== null && !ticketLive(row, ticket, clock.now()))) {
      await deleteAnswerMedia(cfg.env, media);
      return { ok: false, reason: ticket !== null ? "bad_ticket" : "not_pending" };
    }
    const state = endedState(row.state, "answered", iso(now), { answer: { ...made.answer, media } });
    return { ok: true, state: await recordEnd(kit, state, by.user_id, null, cfg, now) };
  }

  return {
    async create(req) {
      const existing = readRow(sql);
      if (existing) return existing.state;
      insertRow(sql, req.state, req.parked, req.ticket);
      queueEvent(sql, eventFor(req.state, req.state.created_at));
      await kit.arm(clock.now());
      return req.state;
    },

    read() {
      return readRow(sql)?.state ?? null;
    },

    answer(input, by) {
      return answerWith(input, by, null);
    },

    async cancel(by, reason) {
      const now = clock.now();
      const row = readRow(sql);
      if (!row) return { ok: false, reason: "unknown" };
      if (!isOpen(row, now)) return { ok: false, reason: "not_pending" };
      const cfg = await kit.required();
      const state = endedState(row.state, "cancelled", iso(now), { reason });
      return { ok: true, state: await recordEnd(kit, state, by, null, cfg, now) };
    },

    ticketView(hash) {
      const row = readRow(sql);
      return row && ticketLive(row, hash, clock.now()) ? row.state : null;
    },

    answerByTicket(hash, input) {
      return answerWith(input, { kind: "ticket", user_id: null, message_id: null }, hash);
    },

    async claim(messageId, input) {
      const now = clock.now();
      let row = readRow(sql);
      if (!row) return { ok: false, status: null };
      // The same inbound claims again when its turn runs again (its object restarted mid-turn).
      if (row.claimed_by === messageId && row.parked) return { ok: true, parked: row.parked, result: asJsonObject(askResult(row.state)) };
      if (!isOpen(row, now)) return { ok: false, status: row.state.status };
      const made = answerOf(row.state, input, { kind: "participant", user_id: null, message_id: messageId }, iso(now));
      if (!made.ok) return { ok: false, status: row.state.status };
      const cfg = await kit.required();
      const media = input.attachments?.length ? await storeAnswerMedia(cfg.env, cfg.settings, kit.fetch, row.state, input.attachments) : null;
      // Storing media awaited the network: another answer may have come meanwhile.
      row = readRow(sql);
      if (!row || !isOpen(row, clock.now())) {
        await deleteAnswerMedia(cfg.env, media);
        return { ok: false, status: row?.state.status ?? null };
      }
      const parked = row.parked;
      // Every stored interaction has its parked run; a row without one cannot be claimed.
      if (!parked) return { ok: false, status: row.state.status };
      const state = { ...endedState(row.state, "answered", iso(now), { answer: { ...made.answer, media } }), reply_message_id: messageId };
      const ended = await recordEnd(kit, state, null, messageId, cfg, now);
      return { ok: true, parked, result: asJsonObject(askResult(ended)) };
    },

    resumeInput() {
      const row = readRow(sql);
      if (!row || !row.parked || row.state.status === "pending") return null;
      return { parked: row.parked, result: asJsonObject(askResult(row.state)) };
    },

    async discard() {
      const row = readRow(sql);
      if (!row) return;
      const env = kit.env();
      // The listing row and the events first: a failure leaves the object, so a retry finds it.
      await run(deleteInteractionRow(env.DB, row.state.interaction_id));
      await interactionHub(env).drop([row.state.interaction_id]);
      await deleteAnswerMedia(env, row.state.answer?.media);
      await kit.forgetAll();
    },
  };
}
