/**
 * ThreadObject: one Durable Object per thread id, the single writer of that thread.
 *
 * It accepts an inbound durably (the door answers 202 only after `accept` returned), queues it
 * behind earlier turns (FIFO, bounded by `thread_queue_depth`), runs each turn under the route's
 * bound execution key, stores the answer record and delivers it. One alarm drives every timer:
 * intake leases of running turns, delivery backoff and claim leases, receipt grace, retention
 * expiry and agent-memory expiry. `alarm()` is idempotent: it re-reads state, acts only on what
 * is due, and re-arms to the earliest remaining instant.
 */
import { DurableObject } from "cloudflare:workers";
import { backoffDelaySeconds } from "../src/bridge/backoff";
import { callbackBody, postCallback } from "../src/bridge/callback";
import { ChannelConfigError, maxCharsFor } from "../src/bridge/chunking";
import { turnSlots } from "../src/bridge/concurrency";
import { channelFailureClass, logDeliveryAttemptFailed, logTurnAbandoned } from "../src/bridge/ops-log";
import { type IndexWrite, writeIndexes } from "../src/bridge/indexes";
import { type Mode, type StoredOverride, liveOverride, turnReads } from "../src/bridge/mode-store";
import type { TurnInbound } from "../src/bridge/payload";
import { type AnswerRecord, type DeliveryStatus, TERMINAL_STATUSES } from "../src/bridge/record";
import { type RouteRow, getRoute } from "../src/bridge/routes-store";
import { type TurnOutcome, errorOutcome, runTarget, silentOutcome } from "../src/bridge/turn-runner";
import { adapterFor } from "../src/channels/registry";
import { planOutbound, sendOutboundStep } from "../src/channels/rich/outbound";
import type { KeyWithOwner } from "../src/auth/key-store";
import type { Env } from "../src/env";
import { edgeFetch } from "../src/net/edge-fetch";
import { type Settings, settingsFor } from "../src/settings/settings";
import { setJqBudget } from "../src/jq/engine";
import { agentKeepsMemory, appendAgentMemory } from "../src/targets/agents/run";
import type { CheckpointMessage } from "../src/targets/checkpoints/types";
import { createTargetContext } from "../src/targets/context";
import { appendCheckpoint, checkpointAlarmDue, deleteCheckpoint, purgeExpiredCheckpoint, readCheckpoint } from "./thread-checkpoint";
import {
  type StoredRecord,
  countAll,
  countLive,
  countWaiting,
  deleteAllRecords,
  deleteMeta,
  dueDeliveries,
  getMeta,
  getStored,
  graceElapsed,
  hasTurnInFlight,
  insertRecord,
  liveRecords,
  migrate,
  newestRecord,
  nextQueued,
  nextWake,
  pruneExpired,
  runningTurns,
  saveStored,
  setMeta,
} from "./thread-store";

/** What a door hands over. `preset` records (slow-down, shed, operator send) run no turn. */
export interface AcceptRequest {
  record: AnswerRecord;
  inbound: TurnInbound;
  /** Milliseconds the caller will wait for the answer inline (0: answer 202 at once). */
  waitMs: number;
  preset?: { status: DeliveryStatus; outcome: Pick<AnswerRecord, "answer_status" | "answer" | "error"> };
  /** The route as the door read it at `routeReadAtMs`; a turn that runs at once uses it instead of reading it again. */
  route?: RouteRow | null;
  /** The route's execution key and owner, read with the route (undefined: not read). */
  executionKey?: KeyWithOwner | null;
  routeReadAtMs?: number;
}

/** How old a door's route snapshot may be and still stand in for the turn's own read. */
const ROUTE_SNAPSHOT_MS = 2000;

export type AcceptResult =
  | { kind: "queue_full" }
  | { kind: "accepted"; message_id: string; thread_id: string; duplicate: boolean }
  | { kind: "answered"; record: AnswerRecord };

export interface TranscriptPage {
  items: AnswerRecord[];
  total: number;
  truncated: boolean;
}

export interface SearchScan {
  matches: Array<{ pos: number; record: AnswerRecord }>;
  scanned: number;
  /** More live records remain past the budget. */
  more: boolean;
}

type Waiter = { resolve: (r: AnswerRecord | null) => void };

export class ThreadObject extends DurableObject<Env> {
  private readonly waiters = new Map<string, Waiter>();
  private pumping = false;
  private driving = false;
  private redrive = false;
  /** The message whose turn this instance is running now (a `running` row without it is orphaned). */
  private activeTurn: string | null = null;
  /** Door-read route snapshots by message id (memory only: a restarted turn reads afresh). */
  private readonly routeSnapshots = new Map<string, { route: RouteRow; key: KeyWithOwner | null | undefined; at: number }>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
  }

  private settings(): Settings {
    const r = settingsFor(this.env);
    if (!r.ok) throw new Error(`invalid configuration: ${r.errors.join("; ")}`);
    setJqBudget(r.settings.jq);
    return r.settings;
  }

  private cachedThreadId: string | null = null;

  private get threadId(): string | null {
    this.cachedThreadId ??= getMeta(this.ctx.storage, "thread_id");
    return this.cachedThreadId;
  }

  // ───────────────────────────── accept ─────────────────────────────

  /**
   * Durably accepts one inbound. Answers `queue_full` (nothing written) past the queue depth; a
   * repeated message_id returns the original. With `waitMs`, waits for the answer and reports it
   * inline when it settles in time; the record is then delivered inline and never called back.
   */
  async accept(req: AcceptRequest): Promise<AcceptResult> {
    const s = this.settings();
    const storage = this.ctx.storage;
    const existing = getStored(storage, req.record.message_id);
    if (existing) return { kind: "accepted", message_id: existing.record.message_id, thread_id: existing.record.thread_id, duplicate: true };
    if (!req.preset && countWaiting(storage) >= s.conversations.threadQueueDepth) return { kind: "queue_full" };
    if (!this.threadId) setMeta(storage, "thread_id", req.record.thread_id);

    const now = Date.now();
    if (req.preset) {
      const rec: AnswerRecord = { ...req.record, ...req.preset.outcome, status: req.preset.status };
      const terminal = TERMINAL_STATUSES.has(rec.status);
      const expires = terminal ? now + s.conversations.answerRetentionTtlSeconds * 1000 : null;
      insertRecord(storage, { ...rec, expires_at: expires ? new Date(expires).toISOString() : null }, req.inbound, "done", expires);
      if (rec.status === "pending_delivery") saveStored(storage, { record: rec, delivery_due_at: now });
      if (rec.origin === "operator") this.refreshOverride(s);
      await this.index([{ record: rec, expires_at: expires }], {});
      await this.armAlarm();
      if (rec.status === "pending_delivery") void this.drive();
      return { kind: "accepted", message_id: rec.message_id, thread_id: rec.thread_id, duplicate: false };
    }

    insertRecord(storage, req.record, req.inbound, "queued", null);
    // An accepted inbound keeps a takeover alive for another retention window (spec §3.2).
    this.refreshOverride(s);
    if (req.route && req.routeReadAtMs) this.routeSnapshots.set(req.record.message_id, { route: req.route, key: req.executionKey, at: req.routeReadAtMs });
    let waiting: Promise<AnswerRecord | null> | null = null;
    if (req.waitMs > 0) {
      waiting = new Promise<AnswerRecord | null>((resolve) => {
        const entry: Waiter = { resolve };
        this.waiters.set(req.record.message_id, entry);
        setTimeout(() => {
          if (this.waiters.get(req.record.message_id) === entry) {
            this.waiters.delete(req.record.message_id);
            resolve(null);
          }
        }, req.waitMs);
      });
    } else {
      // The record must be findable by the read door before the 202 goes out.
      await this.index([{ record: req.record, expires_at: null }], {});
    }
    await this.armAlarm();
    void this.pump();
    if (!waiting) return { kind: "accepted", message_id: req.record.message_id, thread_id: req.record.thread_id, duplicate: false };
    const answered = await waiting;
    if (answered) return { kind: "answered", record: answered };
    // Timed out: the turn goes on and will be delivered by callback or poll; index it now.
    const current = getStored(storage, req.record.message_id);
    if (current) await this.index([{ record: current.record, expires_at: current.expires_at }], {});
    return { kind: "accepted", message_id: req.record.message_id, thread_id: req.record.thread_id, duplicate: false };
  }

  // ───────────────────────────── turns ─────────────────────────────

  /** Runs queued turns one at a time, oldest first. Re-entrant calls return at once. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (;;) {
        const next = nextQueued(this.ctx.storage);
        if (!next) break;
        await this.runOne(next);
      }
    } finally {
      this.pumping = false;
    }
  }

  private async runOne(stored: StoredRecord): Promise<void> {
    const s = this.settings();
    const c = s.conversations;
    const storage = this.ctx.storage;
    const leaseMs = c.intakeClaimLeaseSeconds * 1000;
    // Every run that started and never settled ended its object (crash, CPU limit, eviction): the
    // alarm re-queued it when its lease lapsed. Past the bound the turn is poison; settle it with
    // the error outcome instead of killing the object again, so the thread moves on.
    if (stored.turn_attempts >= c.turnMaxAttempts) {
      const detail = `the turn was abandoned after ${stored.turn_attempts} attempts: each run ended its thread object before settling (crash, CPU limit or eviction)`;
      logTurnAbandoned({ message_id: stored.record.message_id, attempts: stored.turn_attempts });
      return this.settleTurn(stored.record.message_id, errorOutcome(detail), s);
    }
    saveStored(storage, { record: stored.record, turn_state: "running", turn_lease_until: Date.now() + leaseMs, turn_attempts: stored.turn_attempts + 1 });
    this.activeTurn = stored.record.message_id;
    // The attempt must be durable before the run starts: a run that never yields (a runaway jq
    // program) would otherwise die with the implicit transaction holding its count uncommitted.
    await storage.sync();
    await this.armAlarm();
    // Refresh the intake lease while the turn runs, so only a dead instance's turn is re-run.
    const refresher = setInterval(() => {
      const cur = getStored(storage, stored.record.message_id);
      if (cur?.turn_state === "running") saveStored(storage, { record: cur.record, turn_lease_until: Date.now() + leaseMs });
    }, c.intakeClaimRefreshSeconds * 1000);
    const release = await turnSlots(c.maxConcurrentTurns).acquire();
    let outcome: TurnOutcome;
    try {
      outcome = await this.execute(stored, s);
    } catch (err) {
      console.error("turn failed unexpectedly", err);
      outcome = errorOutcome("the turn failed unexpectedly");
    } finally {
      release();
      clearInterval(refresher);
      this.activeTurn = null;
    }
    await this.settleTurn(stored.record.message_id, outcome, s);
  }

  /** Decides the outcome: route gone, manual mode (suppressed), or the target's run. */
  private async execute(stored: StoredRecord, s: Settings): Promise<TurnOutcome> {
    const now = Date.now();
    const snap = this.routeSnapshots.get(stored.record.message_id);
    this.routeSnapshots.delete(stored.record.message_id);
    const fresh = snap && now - snap.at < ROUTE_SNAPSHOT_MS ? snap : undefined;
    const loaded = await turnReads(this.env.DB, { routeName: stored.record.route_name, route: fresh?.route, key: fresh?.key });
    const route = loaded.route;
    if (!route) return errorOutcome("the route was deleted before the turn ran");
    const ctx = this.targetContext(s, route);
    // Re-checked right before the turn runs, so an answer never goes out after a takeover.
    const mode: Mode = this.overrideFor(route, Date.now()) ?? route.initial_mode;
    if (mode === "manual") {
      if (route.target_kind === "agent" && stored.inbound.kind === "message" && (await agentKeepsMemory(ctx, route.target_name))) {
        try {
          await appendAgentMemory(ctx, route.target_name, stored.record.thread_id, { role: "user", content: stored.inbound.text ?? "" });
        } catch (err) {
          return errorOutcome(`manual mode: appending the inbound to agent memory failed: ${err instanceof Error ? err.message : "unknown error"}`);
        }
      }
      return silentOutcome();
    }
    return runTarget(ctx, route, stored.inbound, loaded.key);
  }

  private targetContext(s: Settings, route: RouteRow) {
    const threadId = this.threadId!;
    return createTargetContext(this.env, s, {
      fetch: edgeFetch,
      // Tagging our own storage with the thread id lets the kv checkpoint provider skip the RPC hop.
      local: Object.assign(this.ctx.storage, { threadId }),
      turn: {
        thread_id: threadId,
        route_name: route.route_name,
        setMode: async (mode: Mode) => {
          this.writeOverride(route, mode, s);
        },
      },
    });
  }

  /**
   * Stores the turn's answer and moves the record on. The inline-or-callback decision is made in
   * one synchronous step: if the caller is still waiting, the record is delivered inline and the
   * waiter resolved; otherwise it is scheduled for its door's delivery. Exactly one of the two.
   */
  private async settleTurn(messageId: string, outcome: TurnOutcome, s: Settings): Promise<void> {
    const storage = this.ctx.storage;
    const cur = getStored(storage, messageId);
    if (!cur) return; // forgotten meanwhile
    const now = Date.now();
    const iso = new Date(now).toISOString();
    const retentionMs = s.conversations.answerRetentionTtlSeconds * 1000;
    const rec: AnswerRecord = { ...cur.record, ...outcome, updated_at: iso };
    const waiter = this.waiters.get(messageId);
    let status: DeliveryStatus;
    if (rec.door === "api") {
      if (waiter) status = "delivered";
      else if (rec.callback_url) status = "pending_delivery";
      else status = "delivered";
    } else {
      status = outcome.answer_status === "silent" ? "silent" : "pending_delivery";
    }
    rec.status = status;
    const terminal = TERMINAL_STATUSES.has(status);
    const expires = terminal ? now + retentionMs : null;
    rec.expires_at = expires ? new Date(expires).toISOString() : null;
    saveStored(storage, {
      record: rec,
      turn_state: "done",
      turn_lease_until: null,
      delivery_due_at: status === "pending_delivery" ? now : null,
      expires_at: expires,
    });
    if (waiter) {
      this.waiters.delete(messageId);
      waiter.resolve(rec);
    }
    // An inline-answered inbound is first indexed here, so its mode-override refresh rides here too.
    await this.index([{ record: rec, expires_at: expires }], {});
    await this.armAlarm();
    if (status === "pending_delivery") void this.drive();
  }

  // ───────────────────────────── delivery ─────────────────────────────

  /** Delivers every due record. Runs one drive at a time; a request during a drive loops again. */
  private async drive(): Promise<void> {
    if (this.driving) {
      this.redrive = true;
      return;
    }
    this.driving = true;
    try {
      do {
        this.redrive = false;
        for (const due of dueDeliveries(this.ctx.storage, Date.now())) await this.deliverOne(due);
      } while (this.redrive);
    } finally {
      this.driving = false;
      await this.armAlarm();
    }
  }

  private async deliverOne(due: StoredRecord): Promise<void> {
    const s = this.settings();
    const c = s.conversations;
    const storage = this.ctx.storage;
    // Claim with a lease before sending: a restart re-drives only after the lease lapses.
    saveStored(storage, { record: due.record, delivery_lease_until: Date.now() + c.deliveryClaimLeaseSeconds * 1000 });
    const route = await getRoute(this.env.DB, due.record.route_name);
    const rec: AnswerRecord = { ...due.record };
    if (!route) return this.finishDelivery(rec, "failed", "the route was deleted before delivery", s);
    if (rec.door === "api") return this.deliverCallback(rec, route, s);
    return this.deliverChannel(rec, due.chunks_sent, route, s);
  }

  private async deliverCallback(rec: AnswerRecord, route: RouteRow, s: Settings): Promise<void> {
    const c = s.conversations;
    if (!route.callback_url || !route.callback_secret) {
      // The route no longer calls back: the record is readable by poll, which is its delivery.
      return this.finishDelivery(rec, "delivered", null, s);
    }
    rec.callback_url = route.callback_url;
    rec.attempts += 1;
    const result = await postCallback(
      edgeFetch,
      route.callback_url,
      route.callback_secret,
      callbackBody(rec),
      c.deliveryCallbackTimeoutSeconds * 1000,
      s.outbound,
    );
    if (result.ok) return this.finishDelivery(rec, "delivered", null, s);
    logDeliveryAttemptFailed({ message_id: rec.message_id, via: "callback", attempt: rec.attempts, reason: result.cls ?? "refused", final: rec.attempts >= c.deliveryMaxAttempts });
    return this.retryLater(rec, result.reason, s);
  }

  private async deliverChannel(rec: AnswerRecord, chunksSent: number, route: RouteRow, s: Settings): Promise<void> {
    const c = s.conversations;
    const storage = this.ctx.storage;
    const adapter = rec.channel ? adapterFor(rec.channel) : undefined;
    if (!adapter || !adapter.isConfigured(this.env)) {
      return this.finishDelivery(rec, "failed", `channel ${rec.channel ?? "(none)"} is not configured`, s);
    }
    let max: number;
    try {
      max = maxCharsFor(adapter.name, c);
    } catch (err) {
      if (err instanceof ChannelConfigError) {
        console.error(`configuration error: ${err.message}`);
        return this.finishDelivery(rec, "failed", err.message, s);
      }
      throw err;
    }
    // Text chunks, then an operator message's rich part; a channel lacking a capability the part
    // needs fails the record loudly instead of dropping the field (spec §4.7).
    const plan = planOutbound(adapter, rec.answer ?? "", rec.answer_part, max, c.maxOutboundChunks);
    if (!plan.ok) return this.finishDelivery(rec, "failed", plan.error, s);
    const { tooLong, steps } = plan;
    const to = rec.client_address ?? "";
    const from = route.our_identity ?? rec.our_identity ?? "";
    rec.attempts += 1;
    const sentIds: string[] = [];
    for (let i = chunksSent; i < steps.length; i++) {
      const r = await sendOutboundStep(adapter, steps[i], { to, from }, { fetch: edgeFetch, env: this.env, timeoutMs: c.deliverySendTimeoutSeconds * 1000 });
      if (!r.ok) {
        const final = r.permanent || rec.attempts >= c.deliveryMaxAttempts;
        logDeliveryAttemptFailed({ message_id: rec.message_id, via: adapter.name, attempt: rec.attempts, reason: channelFailureClass(r), final });
        await this.indexOutbound(rec, adapter.name, sentIds, s);
        if (r.permanent) return this.finishDelivery(rec, "failed", `channel send refused: ${r.reason}`, s);
        return this.retryLater(rec, `channel send failed: ${r.reason}`, s);
      }
      if (r.provider_message_id) {
        rec.outbound_message_ids = [...rec.outbound_message_ids, r.provider_message_id];
        sentIds.push(r.provider_message_id);
      }
      // Progress is durable per chunk, so a re-drive resumes after the last accepted one.
      saveStored(storage, { record: rec, chunks_sent: i + 1 });
    }
    await this.indexOutbound(rec, adapter.name, sentIds, s);
    if (tooLong) return this.finishDelivery(rec, "failed", "answer needed more than max_outbound_chunks messages", s);
    const now = Date.now();
    rec.status = "provisional";
    rec.updated_at = new Date(now).toISOString();
    saveStored(storage, { record: rec, delivery_due_at: null, delivery_lease_until: null, grace_until: now + c.deliveryGraceSeconds * 1000 });
    await this.index([{ record: rec, expires_at: null }], {});
  }

  private async indexOutbound(rec: AnswerRecord, channel: string, ids: string[], s: Settings): Promise<void> {
    if (!ids.length) return;
    const expires = Date.now() + (s.conversations.deliveryGraceSeconds + s.conversations.answerRetentionTtlSeconds) * 1000;
    await this.index([], { outbound: ids.map((id) => ({ channel, provider_message_id: id, record: rec, expires_at: expires })) });
  }

  private async retryLater(rec: AnswerRecord, reason: string, s: Settings): Promise<void> {
    const c = s.conversations;
    if (rec.attempts >= c.deliveryMaxAttempts) return this.finishDelivery(rec, "failed", `undelivered after ${rec.attempts} attempts: ${reason}`, s);
    const delay = backoffDelaySeconds(rec.attempts, c.deliveryBackoffBaseSeconds, c.deliveryBackoffMaxSeconds);
    rec.updated_at = new Date().toISOString();
    rec.error = reason;
    saveStored(this.ctx.storage, { record: rec, delivery_due_at: Date.now() + delay * 1000, delivery_lease_until: null });
  }

  /** Terminal transition of a delivery: retention starts now; failures are listed. */
  private async finishDelivery(rec: AnswerRecord, status: "delivered" | "failed", error: string | null, s: Settings): Promise<void> {
    const now = Date.now();
    const expires = now + s.conversations.answerRetentionTtlSeconds * 1000;
    rec.status = status;
    rec.updated_at = new Date(now).toISOString();
    rec.expires_at = new Date(expires).toISOString();
    if (status === "failed") rec.error = error;
    else if (rec.answer_status !== "error") rec.error = null;
    saveStored(this.ctx.storage, { record: rec, delivery_due_at: null, delivery_lease_until: null, grace_until: null, expires_at: expires });
    await this.index([{ record: rec, expires_at: expires }], status === "failed" ? { failed: [{ record: rec, expires_at: expires }] } : {});
  }

  /** A provider receipt for one of this thread's outbound chunks. */
  async applyReceipt(messageId: string, status: "delivered" | "failed", detail?: string): Promise<boolean> {
    const cur = getStored(this.ctx.storage, messageId);
    if (!cur || cur.record.status !== "provisional") return false;
    await this.finishDelivery({ ...cur.record }, status, status === "failed" ? `provider reported the message failed${detail ? ` (${detail})` : ""}` : null, this.settings());
    await this.armAlarm();
    return true;
  }

  // ───────────────────────────── indexes, alarm ─────────────────────────────

  private async index(
    messages: IndexWrite["messages"],
    extra: { failed?: IndexWrite["failed"]; outbound?: IndexWrite["outbound"] },
  ): Promise<void> {
    const storage = this.ctx.storage;
    const newest = newestRecord(storage);
    if (!newest) {
      // Every record is gone (pruned after retention): the listing stops holding the thread.
      const threadId = this.threadId;
      if (threadId && messages.length === 0) await this.env.DB.prepare("DELETE FROM threads WHERE thread_id = ?").bind(threadId).run();
      return;
    }
    const s = this.settings();
    const now = Date.now();
    await writeIndexes(this.env.DB, {
      thread: {
        route_name: newest.route_name,
        thread_id: newest.thread_id,
        client_address: newest.client_address,
        last_activity_at: newest.created_at,
        message_count: countAll(storage),
        last_status: newest.status,
      },
      messages,
      failed: extra.failed,
      outbound: extra.outbound,
    });
  }

  /** When this instance last armed the alarm (null: unknown or none). */
  private armedAt: number | null = null;

  /**
   * Arms the one alarm at the earliest instant with work. An alarm that is already set earlier
   * is left alone: firing early is harmless (the alarm only acts on what is due, then re-arms),
   * and skipping the write saves a storage operation on every step of every turn.
   */
  private async armAlarm(): Promise<void> {
    const s = this.settings();
    const now = Date.now();
    const candidates = [nextWake(this.ctx.storage, s.conversations.intakeClaimLeaseSeconds * 1000, now), checkpointAlarmDue(this.ctx.storage)].filter(
      (t): t is number => typeof t === "number",
    );
    if (!candidates.length) {
      if (this.armedAt !== null) await this.ctx.storage.deleteAlarm();
      this.armedAt = null;
      return;
    }
    const target = Math.max(Math.min(...candidates), now + 1);
    if (this.armedAt !== null && this.armedAt > now && this.armedAt <= target) return;
    await this.ctx.storage.setAlarm(target);
    this.armedAt = target;
  }

  /** The one alarm: orphaned turns, queued turns, grace ends, due deliveries, expiry. */
  override async alarm(): Promise<void> {
    this.armedAt = null; // this alarm is spent
    const storage = this.ctx.storage;
    const now = Date.now();
    const s = this.settings();
    for (const r of runningTurns(storage)) {
      // A running row this instance is not running belongs to a dead instance once its lease lapses.
      if (r.record.message_id !== this.activeTurn && (r.turn_lease_until ?? 0) <= now) {
        saveStored(storage, { record: r.record, turn_state: "queued", turn_lease_until: null });
      }
    }
    for (const g of graceElapsed(storage, now)) await this.finishDelivery({ ...g.record }, "delivered", null, s);
    if (pruneExpired(storage, now).length) await this.index([], {});
    purgeExpiredCheckpoint(storage, now);
    const turns = this.pump();
    await this.drive();
    await turns;
    await this.armAlarm();
  }

  // ───────────────────────────── reads and forget ─────────────────────────────

  /** One live record (expired reads as absent). */
  async getRecord(messageId: string): Promise<AnswerRecord | null> {
    const cur = getStored(this.ctx.storage, messageId);
    if (!cur || (cur.expires_at !== null && cur.expires_at <= Date.now())) return null;
    return cur.record;
  }

  /**
   * A page of live records. With `q`, a case-insensitive substring over inbound text and answer,
   * scanning at most `scanBudget` records; `truncated` says the budget ran out first.
   */
  async transcript(opts: { order: "asc" | "desc"; offset: number; limit: number; q?: string; scanBudget?: number }): Promise<TranscriptPage> {
    const storage = this.ctx.storage;
    const now = Date.now();
    if (!opts.q) {
      return { items: liveRecords(storage, now, opts.order, opts.offset, opts.limit), total: countLive(storage, now), truncated: false };
    }
    const needle = opts.q.toLowerCase();
    const budget = opts.scanBudget ?? 1000;
    const scanned = liveRecords(storage, now, opts.order, 0, budget + 1);
    const truncated = scanned.length > budget;
    const matches = scanned.slice(0, budget).filter((r) => matchesText(r, needle));
    return { items: matches.slice(opts.offset, opts.offset + opts.limit), total: matches.length, truncated };
  }

  /**
   * One thread's share of a route-wide search: scans at most `budget` live records newest first
   * and reports each match with its scan position, so the caller can cut at a smaller budget.
   */
  async search(opts: { q: string; budget: number }): Promise<SearchScan> {
    const rows = liveRecords(this.ctx.storage, Date.now(), "desc", 0, opts.budget + 1);
    const needle = opts.q.toLowerCase();
    const scanned = Math.min(rows.length, opts.budget);
    const matches = rows.slice(0, scanned).flatMap((record, pos) => (matchesText(record, needle) ? [{ pos, record }] : []));
    return { matches, scanned, more: rows.length > opts.budget };
  }

  /** Forgets the thread: records and checkpoint. Refused while a turn is queued or running. */
  async forget(): Promise<{ ok: true; removed: number } | { ok: false; reason: "turn_in_flight" }> {
    const storage = this.ctx.storage;
    if (hasTurnInFlight(storage)) return { ok: false, reason: "turn_in_flight" };
    const threadId = this.threadId;
    const removed = deleteAllRecords(storage);
    deleteMeta(storage, "mode_override");
    if (threadId) deleteCheckpoint(storage, threadId);
    await this.armAlarm();
    return { ok: true, removed };
  }

  // ───────────────────────────── control mode ─────────────────────────────

  /**
   * The thread's live override for `route`, or null. An override belongs to the route
   * incarnation it was set under (its `created_at`): deleting the route voids it at once, even
   * if a route of the same name is created later. A void or expired override is reclaimed here.
   */
  private overrideFor(route: Pick<RouteRow, "created_at">, nowMs: number): Mode | null {
    const raw = getMeta(this.ctx.storage, "mode_override");
    if (!raw) return null;
    const live = liveOverride(JSON.parse(raw) as StoredOverride, route.created_at, nowMs);
    if (!live) deleteMeta(this.ctx.storage, "mode_override");
    return live;
  }

  private writeOverride(route: Pick<RouteRow, "created_at">, mode: Mode, s: Settings): void {
    const value: StoredOverride = { mode, route_created_at: route.created_at, expires_at: Date.now() + s.conversations.answerRetentionTtlSeconds * 1000 };
    setMeta(this.ctx.storage, "mode_override", JSON.stringify(value));
  }

  /** Pushes a live override's expiry a full retention window ahead (accepted inbound, operator send). */
  private refreshOverride(s: Settings): void {
    const raw = getMeta(this.ctx.storage, "mode_override");
    if (!raw) return;
    const o = JSON.parse(raw) as StoredOverride;
    if (o.expires_at <= Date.now()) return;
    setMeta(this.ctx.storage, "mode_override", JSON.stringify({ ...o, expires_at: Date.now() + s.conversations.answerRetentionTtlSeconds * 1000 }));
  }

  /** `GET …/thread/mode`: the mode in force and where it comes from. */
  async getMode(route: Pick<RouteRow, "created_at" | "initial_mode">): Promise<{ mode: Mode; source: "thread" | "route" }> {
    const o = this.overrideFor(route, Date.now());
    return o ? { mode: o, source: "thread" } : { mode: route.initial_mode, source: "route" };
  }

  /** `PUT …/thread/mode` and operator tooling: sets the override for a retention window. */
  async setMode(threadId: string, route: Pick<RouteRow, "created_at">, mode: Mode): Promise<void> {
    if (!this.threadId) setMeta(this.ctx.storage, "thread_id", threadId);
    this.writeOverride(route, mode, this.settings());
  }

  // ───────────────────────────── kv checkpoint provider ─────────────────────────────

  /** kv checkpoint provider: this thread's agent memory, oldest first (expired reads as []). */
  async checkpointRead(threadId: string): Promise<CheckpointMessage[]> {
    return readCheckpoint(this.ctx.storage, threadId, Date.now());
  }

  /** kv checkpoint provider: append and refresh the idle TTL (the caller's setting, minutes). */
  async checkpointAppend(threadId: string, messages: CheckpointMessage[], ttlMinutes: number | null): Promise<void> {
    await appendCheckpoint(this.ctx.storage, threadId, messages, { nowMs: Date.now(), ttlMinutes });
  }

  /** kv checkpoint provider: forget this thread's agent memory. */
  async checkpointDelete(threadId: string): Promise<void> {
    deleteCheckpoint(this.ctx.storage, threadId);
  }
}

function matchesText(r: AnswerRecord, needle: string): boolean {
  return r.inbound_text.toLowerCase().includes(needle) || (r.answer ?? "").toLowerCase().includes(needle);
}
