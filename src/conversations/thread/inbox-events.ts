/**
 * Conversation events out (docs/inbox.md, "Conversation events"): each inbox event of the thread is
 * POSTed to its route policy's `events_url` as `{event, route_name, thread_id, at, by, detail}`,
 * signed like an answer callback (decisions §8: `X-Service-Signature: sha256=<hex HMAC>`) with the
 * route's callback secret, or the policy's events secret on a route that has none.
 *
 * The guarantees are the delivery machine's: each event is queued in the thread's SQLite in the
 * same synchronous step as the state change it reports (src/conversations/thread/inbox-events-table.ts);
 * the head is claimed with a lease before its POST, so a restart re-sends only after the lease ran
 * out and never after a 2xx was recorded; a failed POST backs off with the delivery settings and
 * holds the events behind it, so a receiver sees a thread's events in order; after
 * `delivery_max_attempts` the event is given up. The queue keeps the newest EVENTS_QUEUE_CAP; the
 * thread's alarm drives the retries.
 *
 * Events are queued whether or not the route has an `events_url` (the policy is not at hand in the
 * synchronous step); the drive drops those of a route without one.
 */
import { INBOX_EVENTS, type InboxEventKind } from "../model/inbox";
import { storedPolicyFor } from "../inbox-policy";
import { backoffDelaySeconds } from "./backoff";
import { postCallback } from "./callback";
import type { AlarmArm, ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import type { InboxEvent } from "./inbox";
import { seedOf } from "./inbox-instants";
import { claimEvent, dropEvent, eventsDueAt, headEvent, queueEvents, retryEvent } from "./inbox-events-table";
import { deliveryRoute } from "./route-reads";
import { parseThreadId } from "../../shared/thread-id";

/** The events kept inside: the metrics and the alerts count them, no receiver is told. */
const INTERNAL_EVENTS: ReadonlySet<InboxEventKind> = new Set<InboxEventKind>(["replied", "alerted", "escalated", "labelled"]);

/** The events that leave the deployment: every inbox event but the internal ones. */
export const OUTBOUND_EVENTS: ReadonlySet<InboxEventKind> = new Set(INBOX_EVENTS.filter((e) => !INTERNAL_EVENTS.has(e)));

/** Events a thread keeps queued at most; past it the oldest are dropped (and counted in a log line). */
export const EVENTS_QUEUE_CAP = 200;

/** The POST body of one event on `routeName`. A note's event names the note at most, never its text. */
export function eventBody(e: InboxEvent, routeName: string, threadId: string): string {
  const detail = e.kind === "note_added" ? Object.fromEntries(Object.entries(e.detail).filter(([k, v]) => k === "note_id" && v !== null)) : e.detail;
  return JSON.stringify({ event: e.kind, route_name: routeName, thread_id: threadId, at: new Date(e.at).toISOString(), by: e.by, detail });
}

/**
 * The route an event belongs to: the one the inbox names, else the route a route thread's id
 * names (an action on a thread the inbox had not touched yet). A person thread's event without a
 * route has no receiver.
 */
function eventRoute(e: InboxEvent, threadId: string): string | null {
  if (e.route_name !== null) return e.route_name;
  const parsed = parseThreadId(threadId);
  return parsed.kind === "route" ? parsed.route_name : null;
}

/** The thread's event queue and its driver. */
export class InboxEventsOut {
  /** The drive in progress (one at a time); a request during it loops once more. */
  private running: Promise<void> | null = null;
  private again = false;
  /** When the head may go next, as last read (undefined: read it at the next use). */
  private due: number | null | undefined = undefined;

  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "clock" | "env" | "settings" | "fetch">,
    private readonly parts: { identity: ThreadIdentity; alarm: AlarmArm },
  ) {}

  /** Queues the events that go out. Synchronous: called in the step that changed the state. */
  note(events: InboxEvent[]): void {
    const threadId = this.parts.identity.get();
    if (threadId === null) return;
    const rows = events.flatMap((e) => {
      const route = eventRoute(e, threadId);
      return OUTBOUND_EVENTS.has(e.kind) && route !== null ? [{ route_name: route, body: eventBody(e, route, threadId) }] : [];
    });
    if (!rows.length) return;
    const dropped = queueEvents(this.deps.storage, rows, this.deps.clock.now(), EVENTS_QUEUE_CAP);
    if (dropped > 0) console.warn(JSON.stringify({ event: "inbox_events_dropped", thread_id: threadId, dropped, reason: "queue_full" }));
    this.due = undefined;
  }

  /** When the alarm must drive the queue (a retry, a claim's end), or null. Read once per change. */
  dueAt(): number | null {
    if (this.due === undefined) {
      const seed = seedOf(this.deps.storage, "eventsDue");
      this.due = seed !== undefined ? seed : eventsDueAt(this.deps.storage);
    }
    return this.due;
  }

  /** This instance knows the queue is empty (only this object writes it). */
  knownEmpty(): boolean {
    return this.due === null;
  }

  /** The alarm fired or the queue was cleared behind this instance's back: read it again. */
  reload(): void {
    this.due = undefined;
  }

  /** POSTs every due event in order; resolves when this drive (or the one in progress) is done. */
  drive(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        while (await this.step()) {
          // each step sends one event
        }
      } while (this.again);
    } finally {
      // Each write below forgot the instant it moved, so the arm reads it again only then.
      await this.parts.alarm.arm();
    }
  }

  /** The head's one attempt; answers whether the next event may go now. */
  private async step(): Promise<boolean> {
    // Nothing queued, or not due yet: no read of the queue (the alarm comes back at the instant).
    const due = this.dueAt();
    if (due === null || due > this.deps.clock.now()) return false;
    const { storage, clock } = this.deps;
    const head = headEvent(storage);
    if (!head || head.due_at > clock.now() || (head.lease_until ?? 0) > clock.now()) {
      this.due = head === null ? null : Math.max(head.due_at, head.lease_until ?? 0);
      return false;
    }
    // Every write from here moves the head or its instant.
    this.due = undefined;
    const env = this.deps.env();
    const s = this.deps.settings();
    const c = s.conversations;
    const policy = await storedPolicyFor(env, head.route_name);
    // The route takes no events (or is gone with its policy): nothing to send.
    if (!policy.events_url) {
      dropEvent(storage, head.seq);
      return true;
    }
    const route = await deliveryRoute(env, head.route_name, undefined);
    const secret = route?.callback_secret ?? policy.events_secret;
    const attempts = head.attempts + 1;
    claimEvent(storage, head.seq, attempts, clock.now() + c.deliveryClaimLeaseSeconds * 1000);
    const result = secret
      ? await postCallback(this.deps.fetch, policy.events_url, secret, head.body, c.deliveryCallbackTimeoutSeconds * 1000, s.outbound)
      : { ok: false as const, reason: "no secret signs this route's events: put its inbox policy again" };
    if (result.ok) {
      dropEvent(storage, head.seq);
      return true;
    }
    const final = attempts >= c.deliveryMaxAttempts;
    console.warn(
      JSON.stringify({
        event: "inbox_event_attempt_failed",
        thread_id: this.parts.identity.get(),
        route_name: head.route_name,
        attempt: attempts,
        // A short class, never the URL: the guard's refusal is named as such, anything else "refused".
        reason: "cls" in result && result.cls ? result.cls : result.reason.includes("outbound address guard") ? "outbound address guard" : "refused",
        final,
      }),
    );
    if (final) {
      dropEvent(storage, head.seq);
      return true;
    }
    retryEvent(storage, head.seq, clock.now() + backoffDelaySeconds(attempts, c.deliveryBackoffBaseSeconds, c.deliveryBackoffMaxSeconds) * 1000);
    return false;
  }
}
