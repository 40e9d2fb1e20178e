/**
 * Wires a thread's parts together. Each part gets the dependencies it needs and the parts it
 * hands work to; none of them knows the Durable Object class, which only exposes them as verbs.
 */
import { RouteSnapshots } from "./route-reads";
import { purgeExpiredCheckpoint } from "../../targets/checkpoints/thread-memory";
import { ThreadAlarm } from "./alarm";
import { DeliveryMachine } from "./delivery";
import type { ThreadDeps } from "./deps";
import { ThreadIdentity } from "./identity";
import { IndexOutbox, inboxColumnsOf, outboxDueAt } from "./index-outbox";
import type { StoredRecord } from "./store";
import { InlineWaiters } from "./inline-waiters";
import { AgentMemory } from "./memory";
import { IdempotencyKeys } from "./idempotency-keys";
import { Intake } from "./intake";
import { ThreadInteractions } from "./interaction-turns";
import { ThreadReads } from "./reads";
import { countAll, earliestExpiry, getStored, openRecordCount, pruneExpired } from "./store";
import { ThreadMode } from "./thread-mode";
import { TurnLoop } from "./turn-loop";
import { holdsNothing, vacate } from "./vacancy";
import { ThreadInbox } from "./inbox";
import { sendInboxAlerts } from "./inbox-alerts";
import { InboxEventsOut } from "./inbox-events";
import { reloadInboxInstants } from "./inbox-instants";
import { clearEvents } from "./inbox-events-table";
import { InboxMessenger } from "./inbox-messages";
import { ThreadNotes } from "./notes";
import { inboxPolicyFor, routePoliciesFor } from "../inbox-policy";
import { inboxCounters } from "./inbox-counters";
import { type RemoteTranscript, WebVisitor, type WebSockets } from "./web-visitor";
import { WebAttachments } from "./web-attachments";
import { LiveTurns, type Timers, announceTurns, systemTimers } from "./live-turn";
import { ThreadFeedback } from "./answer-feedback";

/** One thread's parts, as its object holds them. */
export interface ThreadParts {
  identity: ThreadIdentity;
  alarm: ThreadAlarm;
  index: IndexOutbox;
  mode: ThreadMode;
  intake: Intake;
  turns: TurnLoop;
  delivery: DeliveryMachine;
  reads: ThreadReads;
  interactions: ThreadInteractions;
  memory: AgentMemory;
  web: WebVisitor;
  /** The running turn's state and draft, in memory (src/conversations/thread/live-turn.ts). */
  live: LiveTurns;
  keys: IdempotencyKeys;
  inbox: ThreadInbox;
  /** The inbox events queued for the route's events_url (src/conversations/thread/inbox-events.ts). */
  events: InboxEventsOut;
  notes: ThreadNotes;
  /** The customers' ratings of the records' answers (src/conversations/thread/answer-feedback.ts). */
  feedback: ThreadFeedback;
  /**
   * What the thread holds in memory per message it has not finished (test/perf/memory-bounds.test.ts
   * drives a hot thread and reads these back to zero once it is idle).
   */
  held: () => Record<"snapshots" | "firstRuns" | "handoff" | "waiters" | "handed" | "live" | "open", number>;
}

/** Builds the parts of one thread object over `deps`; `timers` schedule the live turn's frames and notices. */
export function composeThread(deps: ThreadDeps, sockets: WebSockets, remote: RemoteTranscript | null = null, timers: Timers = systemTimers): ThreadParts {
  const identity = new ThreadIdentity(deps.storage);
  const uploads = new WebAttachments(
    deps.storage,
    () => deps.clock.now(),
    (keys) => deps.env().WEB_ATTACHMENTS.delete(keys),
    () => alarm.arm(),
  );
  const web = new WebVisitor(
    deps.storage,
    sockets,
    () => deps.clock.now(),
    () => identity.get(),
    remote,
    () => deps.settings().conversations.answerRetentionTtlSeconds * 1000,
    () => alarm.arm(),
    () => live.openFrames(),
    uploads,
  );
  // The turn's frames go to the visitor's pages on this thread; its changes to the route's consoles.
  const live = new LiveTurns(deps.clock, { page: (frame) => web.pushLive(frame), console: (notices) => announceTurns(deps.env(), notices) }, timers);
  const alarm = new ThreadAlarm(
    deps,
    () => web.expiryDue(),
    () => web.dueAt(),
    // The inbox's timers, its events' next POST and its notes' expiry share the inbox's place among the alarm's instants.
    () => earliest(inbox.dueAt(), events.dueAt(), notes.dueAt()),
  );
  const index = new IndexOutbox(
    deps,
    identity,
    () => alarm.arm(),
    () => inboxColumnsOf(inbox.state()),
  );
  const snapshots = new RouteSnapshots();
  const events = new InboxEventsOut(deps, { identity, alarm });
  const inbox = new ThreadInbox(deps, {
    policy: (routeName) => routePoliciesFor(deps.env(), routeName),
    defaultSlaMs: () => deps.settings().conversations.inboxSlaSeconds * 1000,
    emit: (emitted) => {
      index.note({ counters: inboxCounters(emitted, inbox.state()) });
      // Queued in the step that changed the state, then sent in the background (the alarm retries).
      events.note(emitted);
      void events.drive();
    },
    // The listing row carries the inbox state, so every change is pushed like a record's.
    changed: () => index.note(),
    messages: new InboxMessenger(deps, { identity, snapshots, accept: (req) => intake.accept(req) }),
    cleared: () => {
      clearEvents(deps.storage);
      events.reload();
    },
  });
  const notes = new ThreadNotes(deps, { inbox, holdsRecords: () => countAll(deps.storage) > 0 });
  const feedback = new ThreadFeedback(deps, { index, inbox });
  const mode = new ThreadMode(deps);
  const waiters = new InlineWaiters();
  const delivery = new DeliveryMachine(deps, { index, alarm, snapshots, web });
  const startDelivery = (due?: StoredRecord) => void delivery.drive(due);
  const firstRuns = new Set<string>();
  const keys = new IdempotencyKeys(deps.storage, (id) => getStored(deps.storage, id)?.record ?? null);
  const handoff = new Map<string, StoredRecord>();
  const turns = new TurnLoop(deps, { identity, mode, index, alarm, waiters, snapshots, firstRuns, handoff, startDelivery, inbox, live });
  const intake = new Intake(deps, {
    identity,
    mode,
    index,
    alarm,
    waiters,
    snapshots,
    firstRuns,
    handoff,
    startTurns: () => void turns.pump(),
    startDelivery,
    web,
    keys,
    inbox,
    live,
  });
  const reads = new ThreadReads(deps, { identity, mode, alarm, index, inbox, notes });
  const interactions = new ThreadInteractions(deps, { identity, intake });
  const memory = new AgentMemory(deps, alarm);
  const held = () => ({
    snapshots: snapshots.size,
    firstRuns: firstRuns.size,
    handoff: handoff.size,
    waiters: waiters.size,
    handed: delivery.handedCount,
    live: live.heldCount,
    open: openRecordCount(deps.storage),
  });
  return { identity, alarm, index, mode, intake, turns, delivery, reads, interactions, memory, web, live, keys, inbox, events, notes, feedback, held };
}

/** The earliest of some instants (null: none). */
function earliest(...instants: Array<number | null>): number | null {
  const set = instants.filter((t): t is number => t !== null);
  return set.length ? Math.min(...set) : null;
}

/**
 * One firing of the object's alarm. Idempotent: it re-reads state, acts only on what is due
 * (a web session past its expiry, orphaned turns, ended graces, expired records, transcript
 * entries and memory, queued turns, due deliveries, outbox rows left unpushed) and
 * re-arms to the earliest remaining instant. The re-read (`fired`) fills the records' book, so
 * each step below reads the table only when the book shows it work.
 *
 * Answers `vacated` when the swept web session was all the object held: its storage is deleted
 * then (the web mint's promise that a page load that never returns leaves nothing lasting), and
 * the object must create its schema again before its next use.
 */
export async function alarmPass(deps: ThreadDeps, parts: ThreadParts): Promise<"vacated" | undefined> {
  parts.alarm.fired();
  // The inbox parts' instants are read again, in one statement, at their first look below; a
  // thread this instance knows to hold none of them (the agent's own threads) reads nothing, since
  // only this object writes them.
  if (!(parts.inbox.knownEmpty() && parts.events.knownEmpty() && parts.notes.knownEmpty())) {
    reloadInboxInstants(deps.storage);
    parts.inbox.reload();
    parts.events.reload();
    parts.notes.reload();
  }
  const { storage } = deps;
  const now = deps.clock.now();
  if (parts.web.sweepExpired(now)) {
    // The ended session's unsent uploads go first, so an object that held only them is vacated too.
    await parts.web.reap();
    if (await holdsNothing(storage)) {
      await vacate(storage);
      reloadInboxInstants(storage);
      return "vacated";
    }
  }
  const s = deps.settings();
  parts.turns.requeueOrphans(now);
  // The inbox's timers: a snooze's end, auto-resolve, the waiting alert and its escalation.
  const alerts = await parts.inbox.tick();
  if (alerts.length) {
    const threadId = parts.identity.get();
    if (threadId) await sendInboxAlerts(deps.env(), s, await inboxPolicyFor(deps.env(), alerts[0].route_name), threadId, alerts, now);
  }
  await parts.delivery.completeGrace(now, s);
  const expiry = earliestExpiry(storage);
  if (expiry !== null && expiry <= now) {
    const pruned = pruneExpired(storage, now);
    if (pruned.ids.length) parts.index.note({ dropped: pruned.ids, runsDropped: pruned.traced });
    // The inbox state and the notes are the conversation's: they go with the thread's last record.
    if (pruned.ids.length && countAll(storage) === 0) {
      parts.inbox.clear();
      parts.notes.clear();
    }
  }
  // Private notes expire a retention window after their write.
  const notesDue = parts.notes.dueAt();
  if (notesDue !== null && notesDue <= now) parts.notes.prune(now);
  // The page's copies of records expire with them (src/conversations/thread/web-visitor.ts).
  const webDue = parts.web.dueAt(true);
  if (webDue !== null && webDue <= now) {
    parts.web.pruneExpired(now);
    // The visitor's uploads expire with the entries that show them (src/conversations/thread/web-attachments.ts).
    await parts.web.reap();
  }
  const outboxDue = outboxDueAt(storage);
  if (outboxDue !== null && outboxDue <= now) await parts.index.flush();
  if (purgeExpiredCheckpoint(storage, now) > 0) parts.alarm.memoryChanged();
  const turns = parts.turns.pump();
  await parts.delivery.drive();
  // The conversation events due: a retry, or one a restart left queued.
  await parts.events.drive();
  await turns;
  await parts.alarm.arm();
  return undefined;
}
