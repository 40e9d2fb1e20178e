/**
 * InteractionHub: the deployment's one ring of interaction events (docs/interactions.md
 * "The stream"). Interaction objects publish their transitions here from their alarms; each
 * `GET /api/interactions/stream` long-polls `since`, which answers at once when events are waiting
 * and otherwise holds the call until one arrives or the wait ends (the stream's keepalive beat).
 * A shell over src/interactions/hub-ring.ts; the contract is src/interactions/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { EventsSince, InteractionEventInput, InteractionHubRpc } from "../src/interactions/rpc";
import type { Env } from "../src/platform/env";
import { type Clock, systemClock } from "../src/platform/clock";
import { startObject } from "../src/platform/persistence/object-start";
import { appendEvents, dropInteractionEvents, eventsAfter, lastEventId, migrateRing, trimmedThrough } from "../src/interactions/hub-ring";

/** Most events one `since` answers. */
const MAX_LIMIT = 500;

export class InteractionHub extends DurableObject<Env> implements InteractionHubRpc {
  /** The clock the object reads time from. */
  private readonly clock: Clock = systemClock;

  /** Readers waiting for the next publish (memory only: a restarted hub has none, and they re-ask). */
  private readonly waiters = new Set<() => void>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: (storage) => migrateRing(storage.sql) });
  }

  async publish(events: InteractionEventInput[], cap: number): Promise<void> {
    if (!events.length) return;
    appendEvents(this.ctx.storage.sql, events, Math.max(1, cap));
    const woken = [...this.waiters];
    this.waiters.clear();
    for (const wake of woken) wake();
  }

  async since(q: { after: number | null; audience: string | null; audience_since?: string; waitMs: number; limit: number }): Promise<EventsSince> {
    const sql = this.ctx.storage.sql;
    const limit = Math.min(Math.max(1, q.limit), MAX_LIMIT);
    if (q.after === null) return { events: [], last_id: lastEventId(sql), gap: false };
    // An id beyond any the hub gave (a reader of another deployment's ring): it starts over from the newest.
    const top = lastEventId(sql);
    if (q.after > top) return { events: [], last_id: top, gap: true };
    const after = q.after;
    const deadline = this.clock.now() + Math.max(0, q.waitMs);
    for (;;) {
      const events = eventsAfter(sql, after, q.audience, limit, q.audience_since);
      const last = events.length === limit ? events[events.length - 1].id : Math.max(after, lastEventId(sql));
      if (events.length || this.clock.now() >= deadline) return { events, last_id: last, gap: trimmedThrough(sql) > after };
      // Nothing for this reader yet: wait for the next publish (it may still hold nothing for it) or the deadline.
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.max(0, deadline - this.clock.now()));
        this.waiters.add(wake);
      });
    }
  }

  async drop(interactionIds: string[]): Promise<number> {
    return dropInteractionEvents(this.ctx.storage.sql, interactionIds);
  }
}
