/**
 * The Interaction object's owed work, done by its one alarm: the expiry, the audience's ticket, the
 * listing row (D1), the hub's events, the handoff to the thread, the hand-over to a tool run, an
 * outside resume, and the purge after the retention. Each is retried after a failure, so a restart
 * loses nothing: whatever the row says is owed, the next pass does.
 */
import type { ObjectSettings } from "../config/object-settings";
import { interactionHub } from "./rpc";
import { identityFeed, notificationFeedStub } from "../notifications/rpc";
import type { Notification } from "../notifications/schemas";
import type { ParkedToolRun } from "../shared/parked-run";
import { recordEnd } from "./ending";
import { handOffToThread } from "./handoff";
import { deleteInteractionRow, upsertInteractionRow } from "./index-store";
import { run } from "../platform/persistence/d1";
import { RESUME_MAX_ATTEMPTS, RETRY_MS, endedState, eventFor } from "./lifecycle";
import { deleteAnswerMedia } from "./media";
import { type InteractionKit, iso } from "./object-kit";
import { type InteractionRow, asJsonObject, dropEvents, queueEvent, queuedEvents, readRow, saveRow } from "./object-store";
import { type InteractionResult, type InteractionState, askResult } from "./record";
import { resumeOutside } from "./resume-outside";
import { mintTicket, ticketExpiry, ticketHash, ticketNotificationText } from "./tickets";

export interface InteractionAlarm {
  /** One alarm pass as of the kit's clock. */
  run(): Promise<void>;
  /** One alarm pass as of `nowMs`: expiry and purge are decided at that instant (tests pass a fake one). */
  runAt(nowMs: number): Promise<void>;
}

export function interactionAlarm(kit: InteractionKit): InteractionAlarm {
  const { sql, clock } = kit;

  /** Mints the audience's ticket, lists its hash, then sends it to the audience's feed. */
  async function sendTicket(cfg: ObjectSettings, nowMs: number): Promise<void> {
    const row = readRow(sql);
    if (!row) return;
    if (row.state.status !== "pending" || !row.state.audience) return saveRow(sql, { ticket_due: false });
    // A fresh ticket per attempt: the raw ticket is never stored, so a failed send cannot be resent.
    const ticket = mintTicket();
    const hash = await ticketHash(ticket);
    const expiresAt = ticketExpiry(nowMs, cfg.settings.interactions.ticketTtlSeconds, row.expires_at);
    saveRow(sql, { ticket_hash: hash, ticket_expires_at: expiresAt, index_dirty: true });
    await publishRow(cfg);
    // The audience's own feed only: the shared feed is read by every unrestricted notifications
    // reader, and a ticket is a credential for one person.
    const n: Notification = {
      id: crypto.randomUUID(),
      created_at: iso(clock.now()),
      message: ticketNotificationText(row.state, ticket),
      audience: row.state.audience,
    };
    const s = cfg.settings.notifications;
    await notificationFeedStub(cfg.env, identityFeed(row.state.audience)).push(JSON.stringify(n), {
      cap: s.feedMax,
      idleTtlMs: s.identityFeedTtlSeconds * 1000,
    });
    saveRow(sql, { ticket_due: false });
  }

  /** Writes the listing row when it is behind; a change made meanwhile keeps it owed. */
  async function publishRow(cfg: ObjectSettings): Promise<void> {
    const row = readRow(sql);
    if (!row || !row.index_dirty) return;
    const written = JSON.stringify(row.state) + row.ticket_hash;
    const ticket = row.ticket_hash && row.ticket_expires_at !== null ? { hash: row.ticket_hash, expires_at: row.ticket_expires_at } : null;
    await run(upsertInteractionRow(cfg.env.DB, row.state, ticket));
    const now = readRow(sql);
    if (now && JSON.stringify(now.state) + now.ticket_hash === written) saveRow(sql, { index_dirty: false });
  }

  async function publishEvents(cfg: ObjectSettings): Promise<void> {
    const queued = queuedEvents(sql);
    if (!queued.length) return;
    await interactionHub(cfg.env).publish(
      queued.map((q) => q.event),
      cfg.settings.interactions.eventsMax,
    );
    dropEvents(sql, queued[queued.length - 1].seq);
  }

  async function handOff(cfg: ObjectSettings): Promise<void> {
    const row = readRow(sql);
    if (!row) return;
    const messageId = row.resume_message_id ?? row.state.reply_message_id;
    if (!messageId) return saveRow(sql, { resume: "done" });
    const r = await handOffToThread(cfg.env, kit.waiters, row.state, messageId, row.ended_by);
    if (r === "retry") throw new Error("the thread's queue is full");
    if (r === "not_held") {
      // The thread holds no such parked run (forgotten, or the parking turn never settled): nothing carries a reply.
      saveRow(sql, { resume: "done", state: { ...row.state, reply_message_id: null }, index_dirty: true });
      queueEvent(sql, eventFor({ ...row.state, reply_message_id: null }, iso(clock.now()), true));
      return;
    }
    saveRow(sql, { resume: "done" });
  }

  /**
   * A background tool run waits for this interaction (docs/interactions.md): hands it the outcome
   * `ask_user` answers, and records what became of the run. A run not yet waiting (still storing
   * its question) throws, so the alarm tries again shortly.
   */
  async function handToToolRun(parked: ParkedToolRun, cfg: ObjectSettings): Promise<void> {
    const row = readRow(sql);
    if (!row) return;
    const status = row.state.status;
    if (status === "pending") return;
    const r = await kit.waiters.toolRun(parked.run_id).resume(row.state.interaction_id, asJsonObject(askResult(row.state)), status);
    if (r === "retry") throw new Error("the tool run is not waiting yet");
    const finished_at = iso(clock.now());
    const result: InteractionResult =
      r === "resumed"
        ? { outcome: status === "expired" ? "timeout" : "ok", text: null, error: null, next_interaction_id: null, trace_id: parked.run_id, finished_at }
        : { outcome: "error", text: null, error: "the tool run no longer waits for this interaction", next_interaction_id: null, trace_id: null, finished_at };
    const now = readRow(sql);
    if (!now) return; // discarded meanwhile
    const state: InteractionState = { ...now.state, result };
    saveRow(sql, { state, resume: "done", index_dirty: true });
    queueEvent(sql, eventFor(state, finished_at, true));
  }

  /** Resumes a run parked outside any thread, here; its end becomes the interaction's `result`. */
  async function resumeHere(row: InteractionRow, cfg: ObjectSettings): Promise<void> {
    const parked = row.parked;
    let result: InteractionResult;
    if (!parked || parked.kind !== "llm") {
      result = { outcome: "error", text: null, error: "the parked run is gone", next_interaction_id: null, trace_id: null, finished_at: iso(clock.now()) };
    } else if (row.resume_attempts >= RESUME_MAX_ATTEMPTS) {
      result = {
        outcome: "error",
        text: null,
        error: `the resumed run was interrupted ${row.resume_attempts} times`,
        next_interaction_id: null,
        trace_id: null,
        finished_at: iso(clock.now()),
      };
    } else {
      saveRow(sql, { resume_attempts: row.resume_attempts + 1 });
      // The lease: if this object dies mid-run, this alarm finds the resume still owed.
      await kit.arm(clock.now(), true);
      kit.lease.resumeRunning = true;
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
          finished_at: iso(clock.now()),
        };
      } finally {
        kit.lease.resumeRunning = false;
      }
    }
    const now = readRow(sql);
    if (!now) return; // discarded meanwhile
    const state: InteractionState = { ...now.state, result };
    saveRow(sql, { state, resume: "done", index_dirty: true });
    queueEvent(sql, eventFor(state, result.finished_at, true));
  }

  /** Retention is over: the listing row, the stored media, then the object. */
  async function purge(row: InteractionRow): Promise<void> {
    const env = kit.env();
    try {
      await run(deleteInteractionRow(env.DB, row.state.interaction_id));
      await deleteAnswerMedia(env, row.state.answer?.media);
    } catch (err) {
      console.error(`interaction: purging failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
      return void (await kit.storage.setAlarm(clock.now() + RETRY_MS));
    }
    await kit.forgetAll();
  }

  // One pass at a time: the alarm and a pass asked for meanwhile (an answer's, or a test's clock)
  // would otherwise interleave at every await, and both hand the same outcome to a tool run, whose
  // second answer ("no longer waits") could overwrite the first's result.
  let passing: Promise<void> = Promise.resolve();
  function serialRunAt(nowMs: number): Promise<void> {
    const next = passing.then(
      () => runAt(nowMs),
      () => runAt(nowMs),
    );
    passing = next.catch(() => {});
    return next;
  }

  async function runAt(nowMs: number): Promise<void> {
    const cfg = await kit.effective();
    if (!cfg) return void (await kit.storage.setAlarm(clock.now() + 60_000));
    let row = readRow(sql);
    if (!row) return;
    if (row.state.status === "pending" && row.expires_at <= nowMs) {
      await recordEnd(kit, endedState(row.state, "expired", iso(nowMs)), null, null, cfg, nowMs, false);
      row = readRow(sql);
      if (!row) return;
    }
    if (row.purge_at !== null && row.purge_at <= nowMs && (row.resume === "done" || row.resume === "none")) return purge(row);

    let failed = false;
    const attempt = async (what: string, work: () => Promise<void>) => {
      try {
        await work();
      } catch (err) {
        failed = true;
        console.error(`interaction: ${what} failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
      }
    };
    if (row.ticket_due) await attempt("sending the ticket", () => sendTicket(cfg, nowMs));
    await attempt("writing the listing row", () => publishRow(cfg));
    await attempt("publishing events", () => publishEvents(cfg));
    row = readRow(sql);
    if (row?.resume === "handoff") await attempt("handing the outcome to the thread", () => handOff(cfg));
    row = readRow(sql);
    if (!row) return;
    if (row.resume === "run" && row.parked?.kind === "tool_run") {
      const parked = row.parked;
      await attempt("handing the outcome to the tool run", () => handToToolRun(parked, cfg));
      await attempt("writing the listing row", () => publishRow(cfg));
      await attempt("publishing events", () => publishEvents(cfg));
    } else if (row.resume === "run" && !kit.lease.resumeRunning) {
      await resumeHere(row, cfg);
      // The end it recorded is owed to the listing and the stream: publish it now.
      await attempt("writing the listing row", () => publishRow(cfg));
      await attempt("publishing events", () => publishEvents(cfg));
    }
    saveRow(sql, { retry_at: failed ? clock.now() + RETRY_MS : null });
    await kit.arm(clock.now());
  }

  return {
    run: () => serialRunAt(clock.now()),
    runAt: serialRunAt,
  };
}
