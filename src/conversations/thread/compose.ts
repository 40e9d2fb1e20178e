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
import { IndexOutbox, outboxDueAt } from "./index-outbox";
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
import { type InboxEvent, ThreadInbox } from "./inbox";
import { sendInboxAlerts } from "./inbox-alerts";
import { ThreadNotes } from "./notes";
import { inboxPolicyFor } from "../inbox-policy";
import type { CounterDelta } from "../../shards/rpc";
import { type RemoteTranscript, WebVisitor, type WebSockets } from "./web-visitor";

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
  keys: IdempotencyKeys;
  inbox: ThreadInbox;
  notes: ThreadNotes;
  /**
   * What the thread holds in memory per message it has not finished (test/perf/memory-bounds.test.ts
   * drives a hot thread and reads these back to zero once it is idle).
   */
  held: () => Record<"snapshots" | "firstRuns" | "handoff" | "waiters" | "handed" | "open", number>;
}

/** Builds the parts of one thread object over `deps`. */
export function composeThread(deps: ThreadDeps, sockets: WebSockets, remote: RemoteTranscript | null = null): ThreadParts {
  const identity = new ThreadIdentity(deps.storage);
  const web = new WebVisitor(
    deps.storage,
    sockets,
    () => deps.clock.now(),
    () => identity.get(),
    remote,
    () => deps.settings().conversations.answerRetentionTtlSeconds * 1000,
    () => alarm.arm(),
  );
  const alarm = new ThreadAlarm(
    deps,
    () => web.expiryDue(),
    () => web.dueAt(),
    // The inbox's timers and its notes' expiry share the inbox's candidate.
    () => earliest(inbox.dueAt(), notes.dueAt()),
  );
  const index = new IndexOutbox(deps, identity, () => alarm.arm());
  const inbox = new ThreadInbox(deps, {
    policy: (routeName) => inboxPolicyFor(deps.env(), routeName),
    defaultSlaMs: () => deps.settings().conversations.inboxSlaSeconds * 1000,
    emit: (events) => index.note({ counters: inboxCounters(events) }),
    // The listing row carries the inbox state, so every change is pushed like a record's.
    changed: () => index.note(),
  });
  const notes = new ThreadNotes(deps, { inbox, holdsRecords: () => countAll(deps.storage) > 0 });
  const mode = new ThreadMode(deps);
  const waiters = new InlineWaiters();
  const snapshots = new RouteSnapshots();
  const delivery = new DeliveryMachine(deps, { index, alarm, snapshots, web });
  const startDelivery = (due?: StoredRecord) => void delivery.drive(due);
  const firstRuns = new Set<string>();
  const keys = new IdempotencyKeys(deps.storage, (id) => getStored(deps.storage, id)?.record ?? null);
  const handoff = new Map<string, StoredRecord>();
  const turns = new TurnLoop(deps, { identity, mode, index, alarm, waiters, snapshots, firstRuns, handoff, startDelivery, inbox });
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
    open: openRecordCount(deps.storage),
  });
  return { identity, alarm, index, mode, intake, turns, delivery, reads, interactions, memory, web, keys, inbox, notes, held };
}

/** The earlier of two instants (null: none). */
function earliest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.min(a, b);
}

/**
 * The metrics counters of inbox events, per route and minute (docs/inbox.md, "Team figures"): one
 * `inbox_<event>` count each, and for a reply that ended a wait its milliseconds waited.
 */
export function inboxCounters(events: InboxEvent[]): CounterDelta[] {
  const out: CounterDelta[] = [];
  for (const e of events) {
    const minute = Math.floor(e.at / 60_000);
    const label = e.route_name ?? "";
    out.push({ minute, name: `inbox_${e.kind}`, label, value: 1 });
    const waited = e.detail.waited_ms;
    if (e.kind === "replied" && typeof waited === "number") out.push({ minute, name: "inbox_wait_ms", label, value: waited });
  }
  return out;
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
  const { storage } = deps;
  const now = deps.clock.now();
  if (parts.web.sweepExpired(now) && (await holdsNothing(storage))) {
    await vacate(storage);
    return "vacated";
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
  const notesDue = parts.notes.dueAt(true);
  if (notesDue !== null && notesDue <= now) parts.notes.prune(now);
  // The page's copies of records expire with them (src/conversations/thread/web-visitor.ts).
  const webDue = parts.web.dueAt(true);
  if (webDue !== null && webDue <= now) parts.web.pruneExpired(now);
  const outboxDue = outboxDueAt(storage);
  if (outboxDue !== null && outboxDue <= now) await parts.index.flush();
  if (purgeExpiredCheckpoint(storage, now) > 0) parts.alarm.memoryChanged();
  const turns = parts.turns.pump();
  await parts.delivery.drive();
  await turns;
  await parts.alarm.arm();
  return undefined;
}
