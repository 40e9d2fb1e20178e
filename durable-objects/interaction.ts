/**
 * Interaction: one per `ask_user` question (docs/interactions.md). A thin shell over the
 * interaction's SQLite row (src/interactions/object-store.ts), its lifecycle rules
 * (src/interactions/lifecycle.ts, pure) and the work an end owes the run (a handoff to the thread,
 * src/interactions/handoff.ts, or a resume here, src/interactions/resume-outside.ts). The contract is
 * src/interactions/rpc.ts.
 *
 * Every verb is one read-decide-write step on the row; anything that leaves the object (the D1
 * listing row, the hub's events, the audience's ticket, the handoff, an outside resume, the purge)
 * is owed work the one alarm does, retried after a failure. So the run that parks pays one object
 * call, and a restart loses nothing: whatever the row says is owed, the next alarm does.
 */
import { DurableObject } from "cloudflare:workers";
import { constantTimeEqual } from "../src/access-control/crypto";
import type { AnswerInput, ClaimResult, CreateInteraction, InteractionChange, InteractionRpc } from "../src/interactions/rpc";
import { interactionHub } from "../src/interactions/rpc";
import { isolateSettings } from "../src/config/isolate-settings";
import type { Env } from "../src/platform/env";
import type { JsonObject } from "../src/platform/http/bounded-json";
import { edgeFetch } from "../src/platform/net/edge-fetch";
import { identityFeed, notificationFeedStub } from "../src/notifications/rpc";
import type { Notification } from "../src/notifications/schemas";
import type { Settings } from "../src/platform/settings/settings";
import type { ParkedRun, ParkedToolRun } from "../src/targets/model/parked-run";
import { toolRunStub } from "../src/tool-runs/rpc";
import { handOffToThread } from "../src/interactions/handoff";
import { deleteInteractionRow, upsertInteractionRow } from "../src/interactions/index-store";
import { RESUME_MAX_ATTEMPTS, RETRY_MS, answerOf, endedState, eventFor, nextAlarm, resumeOwed } from "../src/interactions/lifecycle";
import { deleteAnswerMedia, storeAnswerMedia } from "../src/interactions/media";
import {
  type InteractionRow,
  asJsonObject,
  dropEvents,
  insertRow,
  migrateInteraction,
  queueEvent,
  queuedEvents,
  readRow,
  saveRow,
} from "../src/interactions/object-store";
import { type AnsweredBy, type InteractionResult, type InteractionState, askResult } from "../src/interactions/record";
import { resumeOutside } from "../src/interactions/resume-outside";
import { mintTicket, ticketExpiry, ticketHash, ticketNotificationText } from "../src/interactions/tickets";

/** What owed work runs with: the env with the runtime overlay on top, and its parsed settings. */
interface Effective {
  env: Env;
  settings: Settings;
}

export class Interaction extends DurableObject<Env> implements InteractionRpc {
  /** An outside resume of this instance is running (a restart clears it). */
  private resumeRunning = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => migrateInteraction(ctx.storage.sql));
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  async create(req: CreateInteraction): Promise<InteractionState> {
    const existing = readRow(this.sql);
    if (existing) return existing.state;
    insertRow(this.sql, req.state, req.parked, req.ticket);
    queueEvent(this.sql, eventFor(req.state, req.state.created_at));
    await this.arm(Date.now());
    return req.state;
  }

  async read(): Promise<InteractionState | null> {
    return readRow(this.sql)?.state ?? null;
  }

  async answer(input: AnswerInput, by: AnsweredBy): Promise<InteractionChange> {
    return this.answerWith(input, by, null);
  }

  async cancel(by: string | null, reason: string | null): Promise<InteractionChange> {
    const now = Date.now();
    const row = readRow(this.sql);
    if (!row) return { ok: false, reason: "unknown" };
    if (!isOpen(row, now)) return { ok: false, reason: "not_pending" };
    const cfg = await this.required();
    const state = endedState(row.state, "cancelled", iso(now), { reason });
    return { ok: true, state: await this.end(state, by, null, cfg, now) };
  }

  async ticketView(hash: string): Promise<InteractionState | null> {
    const row = readRow(this.sql);
    return row && ticketLive(row, hash, Date.now()) ? row.state : null;
  }

  async answerByTicket(hash: string, input: AnswerInput): Promise<InteractionChange> {
    return this.answerWith(input, { kind: "ticket", user_id: null, message_id: null }, hash);
  }

  async claim(messageId: string, input: AnswerInput): Promise<ClaimResult> {
    const now = Date.now();
    let row = readRow(this.sql);
    if (!row) return { ok: false, status: null };
    // The same inbound claims again when its turn runs again (its object restarted mid-turn).
    if (row.claimed_by === messageId && row.parked) return { ok: true, parked: row.parked, result: asJsonObject(askResult(row.state)) };
    if (!isOpen(row, now)) return { ok: false, status: row.state.status };
    const made = answerOf(row.state, input, { kind: "participant", user_id: null, message_id: messageId }, iso(now));
    if (!made.ok) return { ok: false, status: row.state.status };
    const cfg = await this.required();
    const media = input.attachments?.length ? await storeAnswerMedia(cfg.env, cfg.settings, edgeFetch, row.state, input.attachments) : null;
    // Storing media awaited the network: another answer may have come meanwhile.
    row = readRow(this.sql);
    if (!row || !isOpen(row, Date.now())) {
      await deleteAnswerMedia(cfg.env, media);
      return { ok: false, status: row?.state.status ?? null };
    }
    const state = { ...endedState(row.state, "answered", iso(now), { answer: { ...made.answer, media } }), reply_message_id: messageId };
    const ended = await this.end(state, null, messageId, cfg, now);
    return { ok: true, parked: row.parked!, result: asJsonObject(askResult(ended)) };
  }

  async resumeInput(): Promise<{ parked: ParkedRun; result: JsonObject } | null> {
    const row = readRow(this.sql);
    if (!row || !row.parked || row.state.status === "pending") return null;
    return { parked: row.parked, result: asJsonObject(askResult(row.state)) };
  }

  async discard(): Promise<void> {
    const row = readRow(this.sql);
    if (!row) return;
    // The listing row and the events first: a failure leaves the object, so a retry finds it.
    await deleteInteractionRow(this.env.DB, row.state.interaction_id).run();
    await interactionHub(this.env).drop([row.state.interaction_id]);
    await deleteAnswerMedia(this.env, row.state.answer?.media);
    await this.forgetAll();
  }

  override async alarm(): Promise<void> {
    await this.step(Date.now());
  }

  /**
   * The alarm's work as of `nowMs`: public so tests drive expiry and retention with a fake clock
   * (runInDurableObject); the alarm passes the real one.
   */
  async step(nowMs: number): Promise<void> {
    const cfg = await this.effective();
    if (!cfg) return void (await this.ctx.storage.setAlarm(Date.now() + 60_000));
    let row = readRow(this.sql);
    if (!row) return;
    if (row.state.status === "pending" && row.expires_at <= nowMs) {
      await this.end(endedState(row.state, "expired", iso(nowMs)), null, null, cfg, nowMs, false);
      row = readRow(this.sql)!;
    }
    if (row.purge_at !== null && row.purge_at <= nowMs && (row.resume === "done" || row.resume === "none")) return this.purge(row);

    let failed = false;
    const attempt = async (what: string, work: () => Promise<void>) => {
      try {
        await work();
      } catch (err) {
        failed = true;
        console.error(`interaction: ${what} failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
      }
    };
    if (row.ticket_due) await attempt("sending the ticket", () => this.sendTicket(cfg, nowMs));
    await attempt("writing the listing row", () => this.publishRow(cfg));
    await attempt("publishing events", () => this.publishEvents(cfg));
    row = readRow(this.sql)!;
    if (row.resume === "handoff") await attempt("handing the outcome to the thread", () => this.handOff(cfg));
    row = readRow(this.sql)!;
    if (row.resume === "run" && row.parked?.kind === "tool_run") {
      const parked = row.parked;
      await attempt("handing the outcome to the tool run", () => this.handToToolRun(parked, cfg));
      await attempt("writing the listing row", () => this.publishRow(cfg));
      await attempt("publishing events", () => this.publishEvents(cfg));
    } else if (row.resume === "run" && !this.resumeRunning) {
      await this.resumeHere(row, cfg);
      // The end it recorded is owed to the listing and the stream: publish it now.
      await attempt("writing the listing row", () => this.publishRow(cfg));
      await attempt("publishing events", () => this.publishEvents(cfg));
    }
    saveRow(this.sql, { retry_at: failed ? Date.now() + RETRY_MS : null });
    await this.arm(Date.now());
  }

  /** Answers by door or ticket (`ticket`: the hash that must be live). */
  private async answerWith(input: AnswerInput, by: AnsweredBy, ticket: string | null): Promise<InteractionChange> {
    const now = Date.now();
    let row = readRow(this.sql);
    if (!row) return { ok: false, reason: "unknown" };
    if (ticket !== null && !ticketLive(row, ticket, now)) return { ok: false, reason: "bad_ticket" };
    if (!isOpen(row, now)) return { ok: false, reason: "not_pending" };
    const made = answerOf(row.state, input, by, iso(now));
    if (!made.ok) return { ok: false, reason: "bad_option" };
    const cfg = await this.required();
    const media = input.attachments?.length ? await storeAnswerMedia(cfg.env, cfg.settings, edgeFetch, row.state, input.attachments) : null;
    row = readRow(this.sql);
    if (!row || !isOpen(row, Date.now()) || (ticket !== null && !ticketLive(row, ticket, Date.now()))) {
      await deleteAnswerMedia(cfg.env, media);
      return { ok: false, reason: ticket !== null ? "bad_ticket" : "not_pending" };
    }
    const state = endedState(row.state, "answered", iso(now), { answer: { ...made.answer, media } });
    return { ok: true, state: await this.end(state, by.user_id, null, cfg, now) };
  }

  /**
   * Records an end: the state, what it owes the run (nothing when the thread's participant claimed
   * it: the run resumes in that inbound's turn), the event, the purge instant; the ticket is spent.
   */
  private async end(
    state: InteractionState,
    by: string | null,
    claimedBy: string | null,
    cfg: Effective,
    nowMs: number,
    arm = true,
  ): Promise<InteractionState> {
    const owed = claimedBy ? "done" : resumeOwed(state);
    const replyId = state.origin.kind === "thread" ? (claimedBy ?? crypto.randomUUID()) : null;
    const ended: InteractionState = { ...state, reply_message_id: replyId };
    const retention = cfg.settings.interactions.retentionSeconds * 1000;
    saveRow(this.sql, {
      state: ended,
      index_dirty: true,
      ticket_due: false,
      ticket_hash: null,
      ticket_expires_at: null,
      resume: owed,
      resume_message_id: owed === "handoff" ? replyId : null,
      ended_by: by,
      claimed_by: claimedBy,
      purge_at: nowMs + retention,
    });
    queueEvent(this.sql, eventFor(ended, ended.ended_at ?? iso(nowMs)));
    if (arm) await this.arm(nowMs);
    return ended;
  }

  /** Mints the audience's ticket, lists its hash, then sends it to the audience's feed. */
  private async sendTicket(cfg: Effective, nowMs: number): Promise<void> {
    const row = readRow(this.sql)!;
    if (row.state.status !== "pending" || !row.state.audience) return saveRow(this.sql, { ticket_due: false });
    // A fresh ticket per attempt: the raw ticket is never stored, so a failed send cannot be resent.
    const ticket = mintTicket();
    const hash = await ticketHash(ticket);
    const expiresAt = ticketExpiry(nowMs, cfg.settings.interactions.ticketTtlSeconds, row.expires_at);
    saveRow(this.sql, { ticket_hash: hash, ticket_expires_at: expiresAt, index_dirty: true });
    await this.publishRow(cfg);
    // The audience's own feed only: the shared feed is read by every unrestricted notifications
    // reader, and a ticket is a credential for one person.
    const n: Notification = {
      id: crypto.randomUUID(),
      created_at: iso(Date.now()),
      message: ticketNotificationText(row.state, ticket),
      audience: row.state.audience,
    };
    const s = cfg.settings.notifications;
    await notificationFeedStub(cfg.env, identityFeed(row.state.audience)).push(JSON.stringify(n), {
      cap: s.feedMax,
      idleTtlMs: s.identityFeedTtlSeconds * 1000,
    });
    saveRow(this.sql, { ticket_due: false });
  }

  /** Writes the listing row when it is behind; a change made meanwhile keeps it owed. */
  private async publishRow(cfg: Effective): Promise<void> {
    const row = readRow(this.sql);
    if (!row || !row.index_dirty) return;
    const written = JSON.stringify(row.state) + row.ticket_hash;
    const ticket = row.ticket_hash && row.ticket_expires_at !== null ? { hash: row.ticket_hash, expires_at: row.ticket_expires_at } : null;
    await upsertInteractionRow(cfg.env.DB, row.state, ticket).run();
    const now = readRow(this.sql);
    if (now && JSON.stringify(now.state) + now.ticket_hash === written) saveRow(this.sql, { index_dirty: false });
  }

  private async publishEvents(cfg: Effective): Promise<void> {
    const queued = queuedEvents(this.sql);
    if (!queued.length) return;
    await interactionHub(cfg.env).publish(
      queued.map((q) => q.event),
      cfg.settings.interactions.eventsMax,
    );
    dropEvents(this.sql, queued[queued.length - 1].seq);
  }

  private async handOff(cfg: Effective): Promise<void> {
    const row = readRow(this.sql)!;
    const messageId = row.resume_message_id ?? row.state.reply_message_id;
    if (!messageId) return saveRow(this.sql, { resume: "done" });
    const r = await handOffToThread(cfg.env, row.state, messageId, row.ended_by);
    if (r === "retry") throw new Error("the thread's queue is full");
    if (r === "not_held") {
      // The thread holds no such parked run (forgotten, or the parking turn never settled): nothing carries a reply.
      saveRow(this.sql, { resume: "done", state: { ...row.state, reply_message_id: null }, index_dirty: true });
      queueEvent(this.sql, eventFor({ ...row.state, reply_message_id: null }, iso(Date.now()), true));
      return;
    }
    saveRow(this.sql, { resume: "done" });
  }

  /**
   * A background tool run waits for this interaction (docs/interactions.md): hands it the outcome
   * `ask_user` answers, and records what became of the run. A run not yet waiting (still storing
   * its question) throws, so the alarm tries again shortly.
   */
  private async handToToolRun(parked: ParkedToolRun, cfg: Effective): Promise<void> {
    const row = readRow(this.sql)!;
    const status = row.state.status;
    if (status === "pending") return;
    const r = await toolRunStub(cfg.env, parked.run_id).resume(row.state.interaction_id, asJsonObject(askResult(row.state)), status);
    if (r === "retry") throw new Error("the tool run is not waiting yet");
    const finished_at = iso(Date.now());
    const result: InteractionResult =
      r === "resumed"
        ? { outcome: status === "expired" ? "timeout" : "ok", text: null, error: null, next_interaction_id: null, trace_id: parked.run_id, finished_at }
        : { outcome: "error", text: null, error: "the tool run no longer waits for this interaction", next_interaction_id: null, trace_id: null, finished_at };
    const now = readRow(this.sql);
    if (!now) return; // discarded meanwhile
    const state: InteractionState = { ...now.state, result };
    saveRow(this.sql, { state, resume: "done", index_dirty: true });
    queueEvent(this.sql, eventFor(state, finished_at, true));
  }

  /** Resumes a run parked outside any thread, here; its end becomes the interaction's `result`. */
  private async resumeHere(row: InteractionRow, cfg: Effective): Promise<void> {
    const parked = row.parked;
    let result: InteractionResult;
    if (!parked || parked.kind !== "llm") {
      result = { outcome: "error", text: null, error: "the parked run is gone", next_interaction_id: null, trace_id: null, finished_at: iso(Date.now()) };
    } else if (row.resume_attempts >= RESUME_MAX_ATTEMPTS) {
      result = {
        outcome: "error",
        text: null,
        error: `the resumed run was interrupted ${row.resume_attempts} times`,
        next_interaction_id: null,
        trace_id: null,
        finished_at: iso(Date.now()),
      };
    } else {
      saveRow(this.sql, { resume_attempts: row.resume_attempts + 1 });
      // The lease: if this object dies mid-run, this alarm finds the resume still owed.
      await this.arm(Date.now(), true);
      this.resumeRunning = true;
      try {
        result = await resumeOutside(cfg.env, cfg.settings, row.state, parked);
      } catch (err) {
        console.error("interaction: the resumed run failed unexpectedly", err instanceof Error ? err.message : "unknown error");
        result = {
          outcome: "error",
          text: null,
          error: "the resumed run failed unexpectedly",
          next_interaction_id: null,
          trace_id: null,
          finished_at: iso(Date.now()),
        };
      } finally {
        this.resumeRunning = false;
      }
    }
    const now = readRow(this.sql);
    if (!now) return; // discarded meanwhile
    const state: InteractionState = { ...now.state, result };
    saveRow(this.sql, { state, resume: "done", index_dirty: true });
    queueEvent(this.sql, eventFor(state, result.finished_at, true));
  }

  /** Retention is over: the listing row, the stored media, then the object. */
  private async purge(row: InteractionRow): Promise<void> {
    try {
      await deleteInteractionRow(this.env.DB, row.state.interaction_id).run();
      await deleteAnswerMedia(this.env, row.state.answer?.media);
    } catch (err) {
      console.error(`interaction: purging failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
      return void (await this.ctx.storage.setAlarm(Date.now() + RETRY_MS));
    }
    await this.forgetAll();
  }

  /** Deletes everything this object holds; the instance keeps answering as an empty object (its tables re-made). */
  private async forgetAll(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    migrateInteraction(this.sql);
  }

  /** Arms the one alarm to the next instant it has work (`running`: an outside resume holds its lease). */
  private async arm(nowMs: number, running = this.resumeRunning): Promise<void> {
    const row = readRow(this.sql);
    if (!row) return;
    const at = nextAlarm(row, queuedEvents(this.sql).length > 0, running, nowMs);
    if (at === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(at);
  }

  /** The settings for a verb: an invalid configuration fails it (every door answers 500 then too). */
  private async required(): Promise<Effective> {
    const cfg = await this.effective();
    if (!cfg) throw new Error("interaction: the configuration is invalid");
    return cfg;
  }

  /** The settings with the runtime overlay (null while the configuration is invalid: try again later). */
  private async effective(): Promise<Effective | null> {
    let eff;
    try {
      eff = await isolateSettings.ensure(this.env);
    } catch (err) {
      console.error("interaction: loading the settings overlay failed; using the cached settings", err instanceof Error ? err.message : "unknown error");
      eff = isolateSettings.peek(this.env);
    }
    if (!eff.result.ok) {
      console.error("interaction: the configuration is invalid; owed work waits");
      return null;
    }
    return { env: eff.env as unknown as Env, settings: eff.result.settings };
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Pending and not past its expiry (an expiry whose alarm has not fired yet already closes it). */
function isOpen(row: InteractionRow, nowMs: number): boolean {
  return row.state.status === "pending" && row.expires_at > nowMs;
}

/** Is `hash` this interaction's live ticket? Compared in constant time. */
function ticketLive(row: InteractionRow, hash: string, nowMs: number): boolean {
  return (
    row.ticket_hash !== null &&
    row.ticket_expires_at !== null &&
    row.ticket_expires_at > nowMs &&
    isOpen(row, nowMs) &&
    constantTimeEqual(hash, row.ticket_hash)
  );
}
