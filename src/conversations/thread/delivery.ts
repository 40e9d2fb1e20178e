import { backoffDelaySeconds } from "./backoff";
import { callbackBody, postCallback } from "./callback";
import { ChannelConfigError, maxCharsFor } from "../../channels/chunking";
import { channelFailureClass, logDeliveryAttemptFailed } from "./ops-log";
import type { AnswerRecord } from "../model/record";
import { type RouteSnapshots, deliveryRoute } from "./route-reads";
import type { Route } from "../model/route";
import { adapterFor } from "../../channels/registry";
import { planOutbound, sendOutboundStep } from "../../channels/rich/outbound";
import type { Settings } from "../../platform/settings/settings";
import { type CounterDelta, ledgerShard, outboundKey } from "../../shards/rpc";
import type { AlarmArm, IndexWriter, ThreadDeps } from "./deps";
import type { WebVisitor } from "./web-visitor";
import { rateable } from "./answer-feedback";
import { type StoredRecord, dueDeliveryHeadId, getStored, graceElapsed, isOpenRecord, reloadBook, saveStored } from "./store";

/**
 * The delivery machine (decisions §8, §11): drives the thread's `pending_delivery` records in the
 * thread's order, oldest first; while the oldest waits out a backoff, later ones wait behind it, so
 * a receiver never sees a later answer of a thread before an earlier one. Each attempt claims the
 * record with a lease first, so a restart re-drives only after the lease lapses and a recorded
 * success is never sent again. An api record gets one signed callback POST; a channel record is sent
 * chunk by chunk from the last accepted one, then waits in `provisional` for the provider's receipt
 * or the grace period. A failed attempt logs one `delivery_attempt_failed` line and backs off, until
 * `delivery_max_attempts` fails the record.
 */
export class DeliveryMachine {
  private driving = false;
  private redrive = false;
  /**
   * Records just scheduled by this instance, as stored: their first attempt starts from them.
   * Bound: one per record waiting for its delivery (open records). Eviction: its attempt takes it;
   * a record gone from the table meanwhile is dropped when no delivery is due.
   */
  private readonly handed = new Map<string, StoredRecord>();

  /** Records handed over and not yet attempted (tests, and the bound above). */
  get handedCount(): number {
    return this.handed.size;
  }

  constructor(
    private readonly deps: ThreadDeps,
    private readonly parts: { index: IndexWriter; alarm: AlarmArm; snapshots: RouteSnapshots; web: WebVisitor },
  ) {}

  /**
   * Delivers every due record. Runs one drive at a time; a request during a drive loops again.
   * `due` is a record just scheduled, as stored, so its first attempt need not read it back.
   */
  async drive(due?: StoredRecord): Promise<void> {
    if (due) this.handed.set(due.record.message_id, due);
    if (this.driving) {
      this.redrive = true;
      return;
    }
    this.driving = true;
    try {
      do {
        this.redrive = false;
        // In the thread's order: the head goes first; a head that must retry later holds the rest.
        for (
          let id = dueDeliveryHeadId(this.deps.storage, this.deps.clock.now());
          id !== null;
          id = dueDeliveryHeadId(this.deps.storage, this.deps.clock.now())
        ) {
          const head = this.handed.get(id) ?? getStored(this.deps.storage, id);
          this.handed.delete(id);
          if (head) await this.deliverOne(head);
          // Gone from the table under the book (written behind its back): read the table again.
          else reloadBook(this.deps.storage);
        }
      } while (this.redrive);
      // A record forgotten between its scheduling and its attempt is never attempted here.
      for (const id of this.handed.keys()) if (!isOpenRecord(this.deps.storage, id)) this.handed.delete(id);
    } finally {
      this.driving = false;
      await this.parts.alarm.arm();
    }
  }

  /** A provider receipt for one of this thread's outbound chunks (false: the record awaits none). */
  async applyReceipt(messageId: string, status: "delivered" | "failed", detail?: string): Promise<boolean> {
    const cur = getStored(this.deps.storage, messageId);
    if (!cur || cur.record.status !== "provisional") return false;
    await this.finish(
      { ...cur.record },
      status,
      status === "failed" ? `provider reported the message failed${detail ? ` (${detail})` : ""}` : null,
      this.deps.settings(),
    );
    await this.parts.alarm.arm();
    return true;
  }

  /** Alarm: a provisional record whose grace ended without a receipt counts as delivered. */
  async completeGrace(nowMs: number, s: Settings): Promise<void> {
    for (const g of graceElapsed(this.deps.storage, nowMs)) await this.finish({ ...g.record }, "delivered", null, s);
  }

  private async deliverOne(due: StoredRecord): Promise<void> {
    const s = this.deps.settings();
    const c = s.conversations;
    // Claim with a lease before sending: a restart re-drives only after the lease lapses.
    saveStored(this.deps.storage, { record: due.record, delivery_lease_until: this.deps.clock.now() + c.deliveryClaimLeaseSeconds * 1000 });
    // The attempt's route read, where revocation takes effect (src/conversations/thread/route-reads.ts, rule 3).
    // Only a first attempt may use the thread's fresh read; a retry after backoff reads D1.
    const fresh = due.record.attempts === 0 ? this.parts.snapshots.freshRoute(due.record.route_name, this.deps.clock.now()) : undefined;
    const route = await deliveryRoute(this.deps.env(), due.record.route_name, fresh);
    const rec: AnswerRecord = { ...due.record };
    if (!route) return this.finish(rec, "failed", "the route was deleted before delivery", s);
    if (rec.door === "api") return this.deliverCallback(rec, route, s);
    return this.deliverChannel(rec, due.chunks_sent, route, s);
  }

  private async deliverCallback(rec: AnswerRecord, route: Route, s: Settings): Promise<void> {
    const c = s.conversations;
    if (!route.callback_url || !route.callback_secret) {
      // The route no longer calls back: the record is readable by poll, which is its delivery.
      return this.finish(rec, "delivered", null, s);
    }
    // The record names where its answer went: the route's current callback (a re-post may move it).
    rec.callback_url = route.callback_url;
    rec.attempts += 1;
    const result = await postCallback(
      this.deps.fetch,
      route.callback_url,
      route.callback_secret,
      callbackBody(rec),
      c.deliveryCallbackTimeoutSeconds * 1000,
      s.outbound,
    );
    const counted = this.attemptCounters(rec, !result.ok);
    if (result.ok) return this.finish(rec, "delivered", null, s, counted);
    logDeliveryAttemptFailed({
      message_id: rec.message_id,
      via: "callback",
      attempt: rec.attempts,
      reason: result.cls ?? "refused",
      final: rec.attempts >= c.deliveryMaxAttempts,
    });
    return this.retryLater(rec, result.reason, s, counted);
  }

  private async deliverChannel(rec: AnswerRecord, chunksSent: number, route: Route, s: Settings): Promise<void> {
    const c = s.conversations;
    const { storage } = this.deps;
    const env = this.deps.env();
    const adapter = rec.channel ? adapterFor(rec.channel) : undefined;
    if (!adapter || !adapter.isConfigured(env)) {
      return this.finish(rec, "failed", `channel ${rec.channel ?? "(none)"} is not configured`, s);
    }
    let max: number;
    try {
      max = maxCharsFor(adapter.name, c);
    } catch (err) {
      if (err instanceof ChannelConfigError) {
        console.error(`configuration error: ${err.message}`);
        return this.finish(rec, "failed", err.message, s);
      }
      throw err;
    }
    // Text chunks, then an operator message's rich part; a channel lacking a capability the part
    // needs fails the record loudly instead of dropping the field (spec §4.7).
    // The route's answer feedback buttons go under the target's own answers (docs/channels.md).
    const feedbackFor = route.answer_feedback && rec.origin === "client" && !rec.answer_part && rateable(rec) ? rec.message_id : null;
    const plan = planOutbound(adapter, rec.answer ?? "", rec.answer_part, max, c.maxOutboundChunks, feedbackFor);
    if (!plan.ok) return this.finish(rec, "failed", plan.error, s);
    const { tooLong, steps } = plan;
    const to = rec.client_address ?? "";
    const from = route.our_identity ?? rec.our_identity ?? "";
    rec.attempts += 1;
    const sentIds: string[] = [];
    // A web record's answer goes into the visitor's transcript in this thread, as the operator's
    // words when an operator typed it.
    const transcript =
      adapter.name === "web"
        ? (text: string, part: unknown) =>
            this.parts.web.appendFor(rec, rec.origin === "operator" ? "operator" : "bot", text, part, rec.message_id, rec.stopped === true)
        : undefined;
    for (let i = chunksSent; i < steps.length; i++) {
      const r = await sendOutboundStep(
        adapter,
        steps[i],
        { to, from },
        { fetch: this.deps.fetch, env, timeoutMs: c.deliverySendTimeoutSeconds * 1000, transcript },
      );
      if (!r.ok) {
        const counted = this.attemptCounters(rec, true);
        const final = r.permanent || rec.attempts >= c.deliveryMaxAttempts;
        logDeliveryAttemptFailed({ message_id: rec.message_id, via: adapter.name, attempt: rec.attempts, reason: channelFailureClass(r), final });
        await this.indexOutbound(rec, adapter.name, sentIds, s);
        if (r.permanent) return this.finish(rec, "failed", `channel send refused: ${r.reason}`, s, counted);
        return this.retryLater(rec, `channel send failed: ${r.reason}`, s, counted);
      }
      if (r.provider_message_id) {
        rec.outbound_message_ids = [...rec.outbound_message_ids, r.provider_message_id];
        sentIds.push(r.provider_message_id);
      }
      // Progress is durable per chunk, so a re-drive resumes after the last accepted one.
      saveStored(storage, { record: rec, chunks_sent: i + 1 });
    }
    const counted = this.attemptCounters(rec, false);
    await this.indexOutbound(rec, adapter.name, sentIds, s);
    if (tooLong) return this.finish(rec, "failed", "answer needed more than max_outbound_chunks messages", s, counted);
    const now = this.deps.clock.now();
    rec.status = "provisional";
    rec.updated_at = new Date(now).toISOString();
    saveStored(storage, { record: rec, delivery_due_at: null, delivery_lease_until: null, grace_until: now + c.deliveryGraceSeconds * 1000 });
    this.parts.index.note({ counters: counted });
  }

  /**
   * One delivery attempt (and a failed one) for the metrics: carried by the outbox note
   * of the attempt's transition, so the counts reach D1 `run_counters` with the thread's next push,
   * in the shards' batches.
   */
  private attemptCounters(rec: AnswerRecord, failed: boolean): CounterDelta[] {
    const minute = Math.floor(this.deps.clock.now() / 60_000);
    const counters = [{ minute, name: "delivery_attempts", label: rec.route_name, value: 1 }];
    if (failed) counters.push({ minute, name: "delivery_attempt_failures", label: rec.route_name, value: 1 });
    return counters;
  }

  /**
   * Puts the provider ids of chunks just sent in the ledger, so receipts find the record. Awaited
   * (an object call, no D1): a receipt can follow a send within milliseconds.
   */
  private async indexOutbound(rec: AnswerRecord, channel: string, ids: string[], s: Settings): Promise<void> {
    if (!ids.length) return;
    const expires = this.deps.clock.now() + (s.conversations.deliveryGraceSeconds + s.conversations.answerRetentionTtlSeconds) * 1000;
    const env = this.deps.env();
    const entry = { message_id: rec.message_id, thread_id: rec.thread_id, route_name: rec.route_name };
    await Promise.all(ids.map((id) => ledgerShard(env, outboundKey(channel, id)).put(outboundKey(channel, id), entry, expires)));
  }

  private async retryLater(rec: AnswerRecord, reason: string, s: Settings, counted: CounterDelta[]): Promise<void> {
    const c = s.conversations;
    if (rec.attempts >= c.deliveryMaxAttempts) return this.finish(rec, "failed", `undelivered after ${rec.attempts} attempts: ${reason}`, s, counted);
    const delay = backoffDelaySeconds(rec.attempts, c.deliveryBackoffBaseSeconds, c.deliveryBackoffMaxSeconds);
    rec.updated_at = new Date(this.deps.clock.now()).toISOString();
    rec.error = reason;
    saveStored(this.deps.storage, { record: rec, delivery_due_at: this.deps.clock.now() + delay * 1000, delivery_lease_until: null });
    // The listing row is unchanged; the note carries the attempt's counts (and the thread's backlog).
    this.parts.index.note({ counters: counted });
  }

  /** Terminal transition of a delivery: retention starts now; failures are listed. */
  private async finish(rec: AnswerRecord, status: "delivered" | "failed", error: string | null, s: Settings, counted: CounterDelta[] = []): Promise<void> {
    const now = this.deps.clock.now();
    const expires = now + s.conversations.answerRetentionTtlSeconds * 1000;
    rec.status = status;
    rec.updated_at = new Date(now).toISOString();
    rec.expires_at = new Date(expires).toISOString();
    if (status === "failed") rec.error = error;
    else if (rec.answer_status !== "error") rec.error = null;
    saveStored(this.deps.storage, { record: rec, delivery_due_at: null, delivery_lease_until: null, grace_until: null, expires_at: expires });
    // The page's copy of a web record expires with it, wherever the visitor's transcript lives.
    if (rec.channel === "web") await this.parts.web.expireFor(rec, expires);
    this.parts.index.note({
      ...(status === "failed"
        ? { failed: { message_id: rec.message_id, route_name: rec.route_name, thread_id: rec.thread_id, failed_at: rec.updated_at, expires_at: expires } }
        : {}),
      ...(counted.length ? { counters: counted } : {}),
    });
  }
}
