import { type AnswerRecord, TERMINAL_STATUSES } from "../model/record";
import type { AcceptRequest, AcceptResult } from "../model/thread-rpc";
import type { ThreadDeps } from "./deps";
import type { IdempotencyKeys } from "./idempotency-keys";
import { type StoredRecord, countAll, insertRecord, saveStored, storedThreadId } from "./store";
import type { TurnLoopParts } from "./turn-loop";
import type { WebVisitor } from "./web-visitor";
import { attachmentIdOf } from "../model/web";

/** The parts intake hands work to (the turn loop's, plus how it starts the turn loop). */
export interface IntakeParts extends TurnLoopParts {
  /** Starts the turn loop (never awaited: the loop outlives the request). */
  startTurns: () => void;
  /** A web visitor's transcript, which shows each accepted message of the visitor's. */
  web: WebVisitor;
  /** The doors' `Idempotency-Key`s: a retry answers what its first request answered. */
  keys: IdempotencyKeys;
}

/**
 * The visitor's own words on a web thread: shown in the page's transcript from their accept on
 * (in the same transaction on the visitor's own thread; right after it on a linked person's).
 */
async function visitorEntry(web: WebVisitor, rec: AnswerRecord): Promise<void> {
  if (rec.channel !== "web" || rec.origin !== "client" || rec.inbound_kind !== "message") return;
  // The visitor's uploads show under their words, by id (the page fetches each through its own door).
  const attachments = (rec.inbound_attachments ?? []).flatMap((a) => {
    const id = attachmentIdOf(a.url);
    return id ? [{ attachment_id: id, kind: a.kind, ...(a.filename ? { filename: a.filename } : {}) }] : [];
  });
  const part = attachments.length ? { attachments } : null;
  // A form-only message shows as what was sent, field by field.
  if (rec.inbound_text || (part && !rec.inbound_form)) await web.appendFor(rec, "visitor", rec.inbound_text, part, rec.message_id);
  else if (rec.inbound_form) await web.appendFor(rec, "visitor", formSummary(rec.inbound_form), { form: rec.inbound_form, ...part }, rec.message_id);
}

function formSummary(form: Record<string, unknown>): string {
  return Object.entries(form)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join("\n");
}

/** A record just inserted queued, as the table holds it (its seq is not needed by the turn). */
function handedOver(record: AnswerRecord, inbound: AcceptRequest["inbound"]): StoredRecord {
  return {
    seq: 0,
    record,
    inbound,
    turn_state: "queued",
    turn_lease_until: null,
    delivery_due_at: null,
    delivery_lease_until: null,
    grace_until: null,
    expires_at: null,
    chunks_sent: 0,
    turn_attempts: 0,
  };
}

/**
 * Intake: durably accepts one inbound (the door answers 202 only after `accept` returned), queues
 * it behind earlier turns (FIFO, bounded by `thread_queue_depth`), and parks an inline caller until
 * its answer settles or its wait runs out.
 */
export class Intake {
  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "settings" | "clock">,
    private readonly parts: IntakeParts,
  ) {}

  /** See ThreadRpc.accept. */
  async accept(req: AcceptRequest): Promise<AcceptResult> {
    const k = req.idempotency;
    if (!k) return this.admit(req);
    // The key's row is read and, for a new key, written in the same synchronous stretch as the
    // record, so two requests with one key never both insert.
    const seen = this.parts.keys.check(k, this.deps.clock.now());
    if (seen) return seen;
    let remembered = false;
    let answered = false;
    try {
      const result = await this.admit(req, () => {
        this.parts.keys.remember(k, req.record.message_id, req.record.thread_id);
        remembered = true;
      });
      answered = result.kind === "answered";
      return result;
    } finally {
      if (remembered) this.parts.keys.settle(k, answered);
    }
  }

  /** Accepts `req`; `inserted` runs right after the record's insert, in its synchronous stretch. */
  private async admit(req: AcceptRequest, inserted?: () => void): Promise<AcceptResult> {
    const { storage } = this.deps;
    const { identity, mode, index, alarm, waiters } = this.parts;
    const s = this.deps.settings();
    const messageId = req.record.message_id;
    // The insert writes nothing for a redelivered message or a full queue (bounded by
    // `thread_queue_depth`), so a new message reads nothing first; a redelivery is answered as a
    // duplicate, even when the queue is full.
    const refused = (): AcceptResult => {
      const threadId = storedThreadId(storage, messageId);
      return threadId === null ? { kind: "queue_full" } : { kind: "accepted", message_id: messageId, thread_id: threadId, duplicate: true };
    };
    const newThread = countAll(storage) === 0;

    const now = this.deps.clock.now();
    if (req.preset) {
      // The door's route read serves the first delivery attempt (src/conversations/thread/route-reads.ts, rule 3).
      if (req.route && req.routeReadAtMs) this.parts.snapshots.noteRead(req.route, req.routeReadAtMs);
      const rec: AnswerRecord = { ...req.record, ...req.preset.outcome, status: req.preset.status };
      // An operator's send into a thread another operator holds is refused unless forced; the check,
      // the insert and the inbox's note of the send are one synchronous step (the compare-and-set).
      const operator = req.operator;
      if (operator) {
        const may = this.parts.inbox.operatorMaySend(operator.by, operator.force);
        if (!may.ok) return { kind: "claimed", assignee: may.assignee };
      }
      const terminal = TERMINAL_STATUSES.has(rec.status);
      const expires = terminal ? now + s.conversations.answerRetentionTtlSeconds * 1000 : null;
      const stored = { ...rec, expires_at: expires ? new Date(expires).toISOString() : null };
      if (!insertRecord(storage, stored, req.inbound, "done", expires)) return refused();
      inserted?.();
      if (operator) this.parts.inbox.operatorSent(operator.by, rec.route_name, operator.force);
      identity.adopt(req.record.thread_id);
      await visitorEntry(this.parts.web, rec);
      if (rec.status === "pending_delivery") saveStored(storage, { record: rec, delivery_due_at: now });
      if (rec.origin === "operator") mode.refresh();
      index.note({ settled: true });
      // The delivery claims the record before the alarm is armed (see TurnLoop.settle).
      if (rec.status === "pending_delivery") this.parts.startDelivery();
      await alarm.arm();
      return { kind: "accepted", message_id: rec.message_id, thread_id: rec.thread_id, duplicate: false };
    }

    if (!insertRecord(storage, req.record, req.inbound, "queued", null, s.conversations.threadQueueDepth)) return refused();
    inserted?.();
    identity.adopt(req.record.thread_id);
    // The turn starts from the record as stored here, without reading it back.
    this.parts.handoff?.set(messageId, handedOver(req.record, req.inbound));
    await visitorEntry(this.parts.web, req.record);
    // The page (after the visitor's own entry) and the consoles learn the turn waits (memory only).
    this.parts.live?.queue({ message_id: messageId, route_name: req.record.route_name, thread_id: req.record.thread_id });
    this.parts.firstRuns.add(req.record.message_id);
    // An accepted inbound keeps a takeover alive for another retention window (spec §3.2).
    mode.refresh();
    if (req.route && req.routeReadAtMs)
      this.parts.snapshots.remember(req.record.message_id, { route: req.route, key: req.executionKey, at: req.routeReadAtMs, target: req.target });
    // The listing learns of the new record in the background; the read door finds it through the
    // message directory, which the door writes beside this accept (src/conversations/door/admission.ts).
    index.note();
    // A thread's first record waits for its push, so the listing shard knows every thread a door
    // has answered for (a route's door cannot change once it has threads). Later records don't.
    if (newThread) await index.drained();
    const waiting = req.waitMs > 0 ? waiters.wait(req.record.message_id, req.waitMs) : null;
    await alarm.arm();
    this.parts.startTurns();
    if (!waiting) return { kind: "accepted", message_id: req.record.message_id, thread_id: req.record.thread_id, duplicate: false };
    const answered = await waiting;
    if (answered) return { kind: "answered", record: answered };
    // Timed out: the turn goes on and will be delivered by callback or poll.
    return { kind: "accepted", message_id: req.record.message_id, thread_id: req.record.thread_id, duplicate: false };
  }
}
