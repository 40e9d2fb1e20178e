/**
 * The metrics counters of inbox events (docs/inbox.md, "Team figures"), per minute: one
 * `inbox_<event>` count each by route, and the team figures' counters (src/observability/inbox-figures.ts)
 * by route and by operator. They ride the thread's listing outbox with the inbox state's change,
 * so counting costs no D1 statement and no object call of its own. Pure.
 */
import type { CounterDelta } from "../../shards/rpc";
import type { InboxState } from "../model/inbox";
import { INBOX_COUNTER, LABEL_LABEL, OPERATOR_LABEL } from "../../observability/inbox-figures";
import type { InboxEvent } from "./inbox";

/** The waits that count as a handoff: the thread turned to a human. */
const HANDOFF_REASONS = new Set(["agent_handoff", "operator"]);

/**
 * The operator an event counts for. A resolve and a rating judge the conversation, so they go to
 * the operator who held it (a resolve of an unowned thread to whoever resolved it); everything
 * else to the operator who acted.
 */
function operatorOf(e: InboxEvent, state: InboxState): string | null {
  if (e.kind === "resolved") return state.assignee ?? e.by;
  if (e.kind === "rated") return state.assignee;
  return e.by;
}

const num = (v: string | number | null | undefined): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The counters of `events`; `state` is the inbox state they left (its assignee attributes resolves and ratings). */
export function inboxCounters(events: InboxEvent[], state: InboxState): CounterDelta[] {
  const out: CounterDelta[] = [];
  for (const e of events) {
    const minute = Math.floor(e.at / 60_000);
    const route = e.route_name ?? "";
    const operator = operatorOf(e, state);
    const add = (name: string, value: number) => {
      out.push({ minute, name, label: route, value });
      if (operator !== null) out.push({ minute, name, label: `${OPERATOR_LABEL}${operator}`, value });
    };
    // Every event's own count, by route; the figures below read some of them back.
    out.push({ minute, name: `inbox_${e.kind}`, label: route, value: 1 });
    const d = e.detail;
    if (e.kind === "waiting" && typeof d.reason === "string" && HANDOFF_REASONS.has(d.reason)) add(INBOX_COUNTER.handoffs, 1);
    if (e.kind === "replied") {
      if (operator !== null) out.push({ minute, name: INBOX_COUNTER.replies, label: `${OPERATOR_LABEL}${operator}`, value: 1 });
      const waited = num(d.waited_ms);
      if (waited !== null) add(INBOX_COUNTER.waitMs, waited);
      const first = num(d.first_response_ms);
      if (first !== null) {
        add(INBOX_COUNTER.firstResponses, 1);
        add(INBOX_COUNTER.firstResponseMs, first);
      }
    }
    if (e.kind === "resolved") {
      if (operator !== null) out.push({ minute, name: INBOX_COUNTER.resolved, label: `${OPERATOR_LABEL}${operator}`, value: 1 });
      if (d.auto === 1) add(INBOX_COUNTER.autoResolved, 1);
      const open = num(d.open_ms);
      if (open !== null) {
        add(INBOX_COUNTER.resolutions, 1);
        add(INBOX_COUNTER.resolutionMs, open);
      }
    }
    // A label's own count: how many threads got it in the window (docs/inbox.md "Team figures").
    if (e.kind === "labelled" && typeof d.label === "string") out.push({ minute, name: INBOX_COUNTER.labelled, label: `${LABEL_LABEL}${d.label}`, value: 1 });
    if (e.kind === "rated") {
      const rating = num(d.rating);
      if (rating !== null) {
        add(INBOX_COUNTER.ratings, 1);
        add(INBOX_COUNTER.ratingSum, rating);
      }
    }
  }
  return out;
}
