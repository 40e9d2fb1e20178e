import { turnSlots } from "./concurrency";
import { personDefaultMode } from "../model/mode";
import type { Mode } from "../../shared/kinds";
import { logTurnAbandoned } from "./ops-log";
import { type AnswerRecord, type DeliveryStatus, TERMINAL_STATUSES } from "../model/record";
import { type RouteSnapshots, type TurnRead, turnReads } from "./route-reads";
import { routesOfPerson } from "../model/payload";
import { manualRoutesOfTarget } from "../store";
import type { Route } from "../model/route";
import { parseThreadId } from "../../shared/thread-id";
import { type ParkOrigin, type TurnOutcome, errorOutcome, resumeParked, runTarget, silentOutcome, stoppedOutcome } from "./turn-runner";
import { type ParkedNote, dropParked, isResumeInbound, noteParked, resumedInteractionId, waitingParked } from "./parked";
import type { Settings } from "../../platform/settings/settings";
import type { TargetContext, TurnConversation } from "../../targets/context";
import type { AgentEvent } from "../../targets/agents/events";
import type { AlarmArm, IndexWriter, ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import type { InlineWaiters } from "./inline-waiters";
import { type StoredRecord, getStored, hasOrphan, isOpenRecord, isQueued, isRunning, nextQueuedId, reloadBook, runningTurns, saveStored } from "./store";
import type { ThreadMode } from "./thread-mode";
import type { ThreadInbox } from "./inbox";
import type { LiveTurns, TurnRef, TypingSignal } from "./live-turn";
import { PersonTurn, doorAddressOf, pairingIntentOf, withGreeting } from "./pairing-turn";
import { type TurnRun, keepTurnTrace, startTurnRun, turnTrace } from "./turn-trace";
import { summaryOf } from "../../shards/run-summary";
import { traceSteps } from "../../shared/run-steps";
import type { KeyWithOwner } from "../../access-control/key-store";
import { must } from "../../platform/must";

/** The parts the turn loop works with, and how it starts the delivery machine. */
export interface TurnLoopParts {
  identity: ThreadIdentity;
  mode: ThreadMode;
  index: IndexWriter;
  alarm: AlarmArm;
  waiters: InlineWaiters;
  snapshots: RouteSnapshots;
  /**
   * Turns this instance accepted and has not run yet: their first run needs no durability wait
   * (see `runOne`). Memory only; a restarted instance has none.
   */
  firstRuns: Set<string>;
  /**
   * Records this instance accepted and has not run yet, as it stored them: the turn starts from
   * them instead of reading them back (a restarted instance has none and reads the table).
   */
  handoff?: Map<string, StoredRecord>;
  /** Starts the delivery machine (never awaited), with the record just scheduled when there is one. */
  startDelivery: (due?: StoredRecord) => void;
  /** The thread's inbox state: a customer's message reopens it or makes it wait; the agent's handoff opens it. */
  inbox: ThreadInbox;
  /** The thread's live turn (src/conversations/thread/live-turn.ts): state, draft, stop, typing. */
  live?: LiveTurns;
}

/** How long a stopped run may take to end before its turn settles without it. */
export const STOP_GRACE_MS = 250;

/** A stopped agent turn's exchange, kept in the agent's memory when the run ended without keeping it. */
interface StopMemory {
  ctx: TargetContext;
  agent: string;
  threadId: string;
  text: string;
}

/** The detail a poison turn is settled with (admins read it on the record). */
export function abandonedDetail(attempts: number): string {
  return `the turn was abandoned after ${attempts} attempts: each run ended its thread object before settling (crash, CPU limit or eviction)`;
}

/**
 * The turn loop: runs queued turns one at a time, oldest first, each under the route's bound
 * execution key, and settles each answer into the record. A run holds an intake lease, refreshed
 * while it runs, so only a dead instance's turn is re-queued (by the alarm, `requeueOrphans`); a
 * turn whose runs keep ending the object is abandoned after `turn_max_attempts`.
 */
export class TurnLoop {
  private pumping = false;
  /** The message whose turn this instance is running now (a `running` row without it is orphaned). */
  private activeTurn: string | null = null;
  /** The running turn's exchange, when it is a plain agent run (see `untilStopped`). */
  private stopMemory: StopMemory | null = null;

  constructor(
    private readonly deps: ThreadDeps,
    private readonly parts: TurnLoopParts,
  ) {}

  /** Runs queued turns until none is left. Re-entrant calls return at once. */
  async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (;;) {
        const id = nextQueuedId(this.deps.storage);
        if (id === null) break;
        if (this.heldForQueued() > 3 * this.deps.settings().conversations.threadQueueDepth) this.sweepHeld();
        const handed = this.parts.handoff?.get(id);
        this.parts.handoff?.delete(id);
        const next = handed ?? getStored(this.deps.storage, id);
        if (next) await this.runOne(next);
        // Gone from the table under the book (written behind its back): read the table again.
        else reloadBook(this.deps.storage);
      }
      this.sweepHeld();
    } finally {
      this.pumping = false;
    }
  }

  /** Entries held for queued turns: each of the three holds at most one per queued turn, so 3 × the queue's bound in all. */
  private heldForQueued(): number {
    return this.parts.firstRuns.size + (this.parts.handoff?.size ?? 0) + this.parts.snapshots.size;
  }

  /**
   * Drops what is held for messages whose turn is no longer queued: an accept that yields between
   * its insert and its bookkeeping can file an entry after the loop already ran that turn, and a
   * record forgotten while queued never runs. Run when the queue is empty and whenever the entries
   * outnumber the queue's bound, so a thread that never idles stays bounded too.
   */
  private sweepHeld(): void {
    const queued = (id: string) => isQueued(this.deps.storage, id);
    for (const id of this.parts.firstRuns) if (!queued(id)) this.parts.firstRuns.delete(id);
    if (this.parts.handoff) for (const id of this.parts.handoff.keys()) if (!queued(id)) this.parts.handoff.delete(id);
    this.parts.snapshots.keepOnly(queued);
    this.parts.live?.keepOnly(queued);
  }

  /** Alarm: a running row this instance is not running belongs to a dead instance once its lease lapses. */
  requeueOrphans(nowMs: number): void {
    const { storage } = this.deps;
    if (!hasOrphan(storage, this.activeTurn, nowMs)) return;
    for (const r of runningTurns(storage)) {
      if (r.record.message_id !== this.activeTurn && (r.turn_lease_until ?? 0) <= nowMs) {
        saveStored(storage, { record: r.record, turn_state: "queued", turn_lease_until: null });
      }
    }
  }

  private async runOne(stored: StoredRecord): Promise<void> {
    const { storage, clock } = this.deps;
    const now = () => clock.now();
    const s = this.deps.settings();
    const c = s.conversations;
    const leaseMs = c.intakeClaimLeaseSeconds * 1000;
    // Every run that started and never settled ended its object (crash, CPU limit, eviction): the
    // alarm re-queued it when its lease lapsed. Past the bound the turn is poison; settle it with
    // the error outcome instead of killing the object again, so the thread moves on.
    if (stored.turn_attempts >= c.turnMaxAttempts) {
      logTurnAbandoned({ message_id: stored.record.message_id, attempts: stored.turn_attempts });
      return this.settle(stored, errorOutcome(abandonedDetail(stored.turn_attempts)), s, startTurnRun(now()));
    }
    const running = { turn_state: "running" as const, turn_lease_until: now() + leaseMs, turn_attempts: stored.turn_attempts + 1 };
    saveStored(storage, { record: stored.record, ...running });
    stored = { ...stored, ...running };
    this.activeTurn = stored.record.message_id;
    // The attempt must be durable before a run that might end the object: one that never yields
    // would die with the implicit transaction holding its count uncommitted, and run again
    // uncounted. A turn this instance accepted skips the wait: its count commits with the accept
    // (the door's answer and the run's first outbound request both wait for that commit), and if
    // the object dies before it does, the restarted instance counts and waits here, so a poison
    // turn gets at most one run beyond `turn_max_attempts`. Everything else (a re-queued orphan, a
    // turn a previous instance accepted) waits for the commit first.
    const firstRun = this.parts.firstRuns.delete(stored.record.message_id);
    if (!firstRun) await storage.sync();
    await this.parts.alarm.arm();
    // Refresh the intake lease while the turn runs, so only a dead instance's turn is re-run.
    // The record's body does not change while its turn runs.
    const { record } = stored;
    const refresher = setInterval(() => {
      if (isRunning(storage, record.message_id)) saveStored(storage, { record, turn_lease_until: now() + leaseMs });
    }, c.intakeClaimRefreshSeconds * 1000);
    const release = await turnSlots(c.maxConcurrentTurns).acquire();
    // The run's trace: timed from here to its settle, steps collected on its context.
    const run = startTurnRun(now());
    // A stop door aborts this signal; the turn then settles with the draft so far.
    const signal = this.parts.live?.begin(refOf(record)) ?? new AbortController().signal;
    let outcome: TurnOutcome;
    try {
      outcome = await this.untilStopped(record.message_id, this.execute(stored, s, run, signal), signal);
    } catch (err) {
      console.error("turn failed unexpectedly", err);
      outcome = errorOutcome("the turn failed unexpectedly");
    } finally {
      release();
      clearInterval(refresher);
      this.activeTurn = null;
      this.stopMemory = null;
    }
    await this.settle(stored, outcome, s, run);
  }

  /**
   * The turn's outcome, or the stopped outcome once `signal` aborts (docs/targets.md "Stopping a
   * turn"): the answer is the draft the run had written. The turn does not wait for a run that
   * ignores the signal past STOP_GRACE_MS; its result is then dropped. An agent's exchange is kept
   * in its memory (the question, and the draft as its answer) unless the run ended having kept it.
   */
  private async untilStopped(messageId: string, running: Promise<TurnOutcome>, signal: AbortSignal): Promise<TurnOutcome> {
    // A run that fails after its turn settled stopped is nobody's to report.
    running.catch(() => undefined);
    let onAbort = () => {};
    const aborted = new Promise<null>((resolve) => {
      onAbort = () => resolve(null);
      if (signal.aborted) resolve(null);
      else signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const first = await Promise.race([running, aborted]);
      if (first && !signal.aborted) return first;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    const draft = this.parts.live?.draftOf(messageId) ?? "";
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = await Promise.race([
      running.catch(() => null),
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), STOP_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
    const kept = late !== null && late.answer_status !== "error";
    const memory = this.stopMemory;
    if (memory && !kept) await this.rememberStopped(memory, draft);
    return stoppedOutcome(draft);
  }

  /** Keeps a stopped agent turn's exchange in the agent's memory; a failure is logged, the turn still settles. */
  private async rememberStopped(m: StopMemory, draft: string): Promise<void> {
    const { agents } = this.deps.turn;
    try {
      if (!(await agents.keepsMemory(m.ctx, m.agent))) return;
      await agents.appendMemory(m.ctx, m.agent, m.threadId, { role: "user", content: m.text });
      if (draft.trim() !== "") await agents.appendMemory(m.ctx, m.agent, m.threadId, { role: "assistant", content: draft });
    } catch (err) {
      console.error("keeping a stopped turn in agent memory failed", err instanceof Error ? err.message : "unknown error");
    }
  }

  /** Decides the outcome: route gone, manual mode (suppressed), or the target's run. */
  private async execute(stored: StoredRecord, s: Settings, run: TurnRun, signal: AbortSignal): Promise<TurnOutcome> {
    // The turn's one route read (src/conversations/thread/route-reads.ts): the door's if still fresh, else D1.
    const readAt = this.deps.clock.now();
    const fresh = this.parts.snapshots.take(stored.record.message_id, readAt);
    const read = await turnReads(this.deps.env(), stored.record.route_name, fresh);
    if (!read) return errorOutcome("the route was deleted before the turn ran");
    const route = read.route;
    if (!fresh) this.parts.snapshots.noteRead(route, readAt);
    const ctx = this.targetContext(
      s,
      route,
      {
        target: { kind: route.target_kind, name: route.target_name },
        address: doorAddressOf(stored.record),
        multichannel: read.target.config?.multichannel === true,
      },
      personLocale(stored),
    );
    ctx.signal = signal;
    run.target = { kind: route.target_kind, name: route.target_name, version: null };
    traceSteps(ctx, run.log);
    // A multichannel target's person work (src/conversations/thread/pairing-turn.ts): the first contact's
    // greeting goes before whatever this turn answers, and a pairing message is answered here, in
    // either mode, without running the target.
    if (!stored.inbound.person) return this.decide(stored, read, ctx);
    const person = new PersonTurn(this.deps.env(), route, stored.record, this.deps.clock.now(), stored.inbound.guess_key ?? null);
    const greeting = await person.greeting(stored.inbound.greeting);
    const intent = pairingIntentOf(stored.inbound);
    const outcome = intent.kind === "text" ? await this.decide(stored, read, ctx) : await person.pairing(intent);
    return withGreeting(outcome, greeting);
  }

  /**
   * The mode this turn runs in, re-checked right before it runs so an answer never goes out after
   * a takeover: the live override, else the route's initial mode, or on a linked person's thread
   * its default (manual when any route the person spans is manual, spec §3.2), decided from the
   * door's read of the target's manual routes, or one read of them when that is stale.
   */
  private async modeFor(stored: StoredRecord, read: TurnRead): Promise<Mode> {
    const personThread = parseThreadId(stored.record.thread_id).kind === "person";
    const override = this.parts.mode.overrideFor(personThread ? { created_at: null } : read.route);
    if (override) return override;
    const person = stored.inbound.person;
    if (!personThread || !person || read.route.initial_mode === "manual") return read.route.initial_mode;
    const manual = read.target.manualRoutes ?? (await manualRoutesOfTarget(this.deps.env().DB, read.route.target_kind, read.route.target_name));
    return personDefaultMode(routesOfPerson(person), manual);
  }

  /** The turn's own outcome: silence in manual mode, else the target's run. */
  private async decide(stored: StoredRecord, read: TurnRead, ctx: TargetContext): Promise<TurnOutcome> {
    const { route, key } = read;
    const mode = await this.modeFor(stored, read);
    // The inbox learns of the customer's message with the mode it met: reopened, or waiting for a human.
    if (stored.record.origin === "client" && stored.inbound.kind === "message") {
      const reply = { text: stored.inbound.text, reply_id: stored.inbound.params?.reply_id ?? null };
      // A reply that rates the conversation is recorded by the inbox and answered by nobody.
      if ((await this.parts.inbox.inbound(route.route_name, mode, reply)) === "rated") return silentOutcome();
      // Out of hours, a route may have the customer told when a person is back beside the agent's answer.
      if (mode !== "manual") await this.parts.inbox.agentAnswering(route.route_name, read.target.hours, personLocale(stored));
    }
    if (mode === "manual") {
      if (route.target_kind === "agent" && stored.inbound.kind === "message" && (await this.deps.turn.agents.keepsMemory(ctx, route.target_name))) {
        try {
          await this.deps.turn.agents.appendMemory(ctx, route.target_name, stored.record.thread_id, { role: "user", content: stored.inbound.text ?? "" });
        } catch (err) {
          return errorOutcome(`manual mode: appending the inbound to agent memory failed: ${err instanceof Error ? err.message : "unknown error"}`);
        }
      }
      return silentOutcome();
    }
    // The target runs: the live turn shows it, and its channel's typing signal follows.
    const messageId = stored.record.message_id;
    this.parts.live?.running(messageId, this.typingFor(stored.record, route));
    const onEvent = (e: AgentEvent) => this.parts.live?.event(messageId, e);
    // A run parked on ask_user resumes here, handed back (a door answer, a cancel, an
    // expiry) or answered by this inbound; any turn's run may park (docs/interactions.md).
    const park = this.parkOrigin(stored, route);
    if (isResumeInbound(stored.inbound)) return this.resumeHandedBack(stored, read, ctx, park, onEvent);
    const waiting = stored.inbound.kind === "message" ? waitingParked(this.deps.storage) : null;
    if (waiting) {
      const answered = await this.answerParked(waiting, stored, read, ctx, park, onEvent);
      if (answered) return answered;
    }
    const binding = read.target.config?.state_binding ?? null;
    if (route.target_kind === "agent") this.stopMemory = { ctx, agent: route.target_name, threadId: stored.record.thread_id, text: stored.inbound.text ?? "" };
    return runTarget(
      this.deps.turn,
      ctx,
      route,
      stored.inbound,
      key,
      binding ? { binding, pendingSaves: read.target.pendingSaves, writer: read.target.configWriter } : null,
      park,
      onEvent,
    );
  }

  /**
   * The channel's typing signal for a customer's message (docs/channels.md "Typing"), sent through
   * the thread's network edge like its answers; a failure is logged and changes nothing. Null
   * where the channel shows none (the web page has the live turn's frames instead).
   */
  private typingFor(rec: AnswerRecord, route: Route): TypingSignal | null {
    if (rec.door !== "channel" || !rec.channel || !rec.client_address || rec.origin !== "client" || rec.inbound_kind !== "message") return null;
    const typing = this.deps.turn.channels.adapterFor(rec.channel)?.typing;
    if (!typing) return null;
    const args = { to: rec.client_address, from: route.our_identity ?? rec.our_identity ?? "", reply_to: rec.provider_message_id };
    const channel = rec.channel;
    return {
      refreshMs: typing.refreshMs,
      send: () => {
        const deps = { fetch: this.deps.fetch, env: this.deps.env(), timeoutMs: this.deps.settings().conversations.deliverySendTimeoutSeconds * 1000 };
        void typing
          .send(args, deps)
          .then((r) => {
            if (!r.ok) console.error(JSON.stringify({ event: "typing_signal_failed", channel, message_id: rec.message_id, reason: r.reason }));
          })
          .catch(() => undefined);
      },
    };
  }

  /** Where this turn's run may park: its thread and record, when the interactions store is configured. */
  private parkOrigin(stored: StoredRecord, route: Route): ParkOrigin | null {
    if (!this.deps.turn.questions.canPark(this.deps.settings())) return null;
    const r = stored.record;
    return { route_name: route.route_name, thread_id: r.thread_id, message_id: r.message_id, door: r.door, channel: r.channel };
  }

  /**
   * This inbound answers the interaction the thread waits on: the interaction is claimed with it
   * and the parked run resumes in this turn, its reply this record's answer. Null: the interaction
   * ended otherwise meanwhile (its resume turn is on its way) or is gone, and the inbound runs as
   * an ordinary turn.
   */
  private async answerParked(
    waiting: ParkedNote,
    stored: StoredRecord,
    read: TurnRead,
    ctx: TargetContext,
    park: ParkOrigin | null,
    onEvent: (e: AgentEvent) => void,
  ): Promise<TurnOutcome | null> {
    const { inbound } = stored;
    const input = {
      text: inbound.text,
      form: inbound.form ?? null,
      params: inbound.params ?? null,
      attachments: inbound.attachments ?? null,
      location: inbound.location ?? null,
    };
    let claim;
    try {
      claim = await this.deps.turn.questions.stub(this.deps.env(), waiting.interaction_id).claim(stored.record.message_id, input);
    } catch (err) {
      console.error("answering a parked interaction failed", err instanceof Error ? err.message : "unknown error");
      return errorOutcome("this message answers a pending ask_user interaction, which could not be reached");
    }
    if (!claim.ok) {
      // Gone (erased, or its retention ended): nothing will come back for it.
      if (claim.status === null) dropParked(this.deps.storage, waiting.interaction_id);
      return null;
    }
    const outcome = await resumeParked(this.deps.turn, ctx, read.route, claim.parked, claim.result, park, read.key, onEvent);
    return { ...outcome, resolved: waiting.interaction_id };
  }

  /** A resume turn: the interaction ended by a door answer, a cancel or its expiry; its run goes on here. */
  private async resumeHandedBack(
    stored: StoredRecord,
    read: TurnRead,
    ctx: TargetContext,
    park: ParkOrigin | null,
    onEvent: (e: AgentEvent) => void,
  ): Promise<TurnOutcome> {
    const id = resumedInteractionId(stored.inbound);
    const input = id ? await this.deps.turn.questions.stub(this.deps.env(), id).resumeInput() : null;
    if (!input) return errorOutcome("the parked run is gone: its interaction was erased or its retention ended");
    return resumeParked(this.deps.turn, ctx, read.route, input.parked, input.result, park, read.key, onEvent);
  }

  private targetContext(s: Settings, route: Route, conversation: TurnConversation, locale: string | null): TargetContext {
    const threadId = must(this.parts.identity.get(), "the thread id of a thread running a turn");
    const { alarm, mode } = this.parts;
    return this.deps.turn.targets.context(this.deps.env(), s, {
      fetch: this.deps.fetch,
      // The kv checkpoint provider uses this thread's own memory without an RPC hop.
      local: {
        storage: this.deps.storage,
        threadId,
        armAlarm: () => {
          alarm.memoryChanged?.();
          return alarm.arm();
        },
      },
      turn: {
        thread_id: threadId,
        route_name: route.route_name,
        setMode: async (m: Mode) => {
          mode.set(parseThreadId(threadId).kind === "person" ? { created_at: null } : route, m);
          // The agent's handoff opens the thread for a human in the same step (docs/inbox.md).
          await this.parts.inbox.modeChanged(m, route.route_name, "agent_handoff", null, locale);
        },
        setLabels: async (add: string[], remove: string[]) => {
          const r = await this.parts.inbox.act({ kind: "labels", by: `${route.target_kind}:${route.target_name}`, add, remove });
          if (!r.ok) throw new Error(r.reason === "too_many_labels" ? "a thread carries at most 16 labels" : "the labels could not be set");
          return r.state.labels;
        },
        conversation,
      },
    });
  }

  /**
   * Stores the turn's answer and moves the record on. The inline-or-callback decision is made in
   * one synchronous step: if the caller is still waiting, the record is delivered inline and the
   * waiter resolved; otherwise it is scheduled for its door's delivery. Exactly one of the two.
   */
  private async settle(cur: StoredRecord, outcome: TurnOutcome, s: Settings, run: TurnRun): Promise<void> {
    const { storage } = this.deps;
    const { waiters } = this.parts;
    const messageId = cur.record.message_id;
    // The live turn ends first: its last draft, then its state, reach the pages before the answer's entry.
    this.parts.live?.end(refOf(cur.record), outcome.parked ? "waiting" : "settled");
    if (!isOpenRecord(storage, messageId)) return; // forgotten meanwhile
    const now = this.deps.clock.now();
    const iso = new Date(now).toISOString();
    const retentionMs = s.conversations.answerRetentionTtlSeconds * 1000;
    // `parked` and `resolved` are the thread's bookkeeping, not record fields.
    const { parked, resolved, ...fields } = outcome;
    const rec: AnswerRecord = { ...cur.record, ...fields, updated_at: iso };
    const inline = waiters.isWaiting(messageId);
    let status: DeliveryStatus;
    if (rec.door === "api") {
      if (inline) status = "delivered";
      else if (rec.callback_url) status = "pending_delivery";
      else status = "delivered";
    } else {
      status = outcome.answer_status === "silent" ? "silent" : "pending_delivery";
    }
    rec.status = status;
    const terminal = TERMINAL_STATUSES.has(status);
    const expires = terminal ? now + retentionMs : null;
    rec.expires_at = expires ? new Date(expires).toISOString() : null;
    const settled = {
      record: rec,
      turn_state: "done" as const,
      turn_lease_until: null,
      delivery_due_at: status === "pending_delivery" ? now : null,
      expires_at: expires,
    };
    saveStored(storage, settled);
    // The run's trace, in the settle's own transaction; its summary row rides the outbox.
    const trace = turnTrace(rec, cur.inbound, run, outcome, now);
    keepTurnTrace(storage, trace);
    // In the same transaction: the interaction this inbound answered is no longer waited on, and
    // the one this turn parked on is (the thread's next inbound answers it).
    if (resolved) dropParked(storage, resolved);
    if (parked) {
      const route = {
        route_name: rec.route_name,
        door: rec.door,
        channel: rec.channel,
        our_identity: rec.our_identity,
        callback_url: rec.callback_url,
        client_address: rec.client_address,
        caller_principal: rec.caller_principal,
      };
      noteParked(storage, { interaction_id: parked.interaction_id, asked_by: messageId, route }, now);
    }
    if (inline) waiters.answer(messageId, rec);
    this.parts.index.note({ settled: true, run: summaryOf(trace, "thread") });
    // The delivery starts first: its claim (taken before its first wait) moves the record's wake a
    // lease ahead, so the alarm is not armed to fire now, in the middle of that delivery.
    if (status === "pending_delivery") this.parts.startDelivery({ ...cur, ...settled });
    await this.parts.alarm.arm();
  }
}

/** A record's turn, as the live turn names it. */
function refOf(r: AnswerRecord): TurnRef {
  return { message_id: r.message_id, route_name: r.route_name, thread_id: r.thread_id };
}

/** The locale of the person writing (known on a linked person's thread), for what the inbox writes to them. */
function personLocale(stored: StoredRecord): string | null {
  return stored.inbound.person?.locale ?? null;
}
