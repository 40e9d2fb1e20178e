/**
 * The inbox's team figures (docs/inbox.md "Team figures"): handoffs and the handoff rate, first
 * response, waiting and resolution times, resolved and auto-resolved threads, and satisfaction, by
 * route and by operator. The thread object turns its inbox events into per-minute counters
 * (src/conversations/thread/inbox-counters.ts) that ride its listing outbox to the shards, which
 * add them to D1 `run_counters` in their batches; the metrics read them back over the window.
 *
 * A counter's label is a route name, or `operator:<user_id>` for an operator's share of the same
 * figure. Route names never hold a `:`, so the two can never be taken for each other.
 */
import { z } from "zod";

/** The counter names the figures read. Those marked per operator are also kept under `operator:<user_id>`. */
export const INBOX_COUNTER = {
  /** A wait that began because the thread turned to a human (the agent's handoff, an operator's takeover); per operator: takeovers. */
  handoffs: "inbox_handoff",
  /** Operator replies that ended a wait, and the milliseconds waited before them (per operator). */
  replies: "inbox_replied",
  waitMs: "inbox_wait_ms",
  /** The first reply since a human took the thread, and the milliseconds from that to it (per operator). */
  firstResponses: "inbox_first_response",
  firstResponseMs: "inbox_first_response_ms",
  /** Resolved threads, those resolved by their idle timer, and per operator: the assignee's, else the resolver's. */
  resolved: "inbox_resolved",
  autoResolved: "inbox_auto_resolved",
  /** Resolves of a thread a human had taken, and the milliseconds from taking to resolving (per operator). */
  resolutions: "inbox_resolution",
  resolutionMs: "inbox_resolution_ms",
  /** Numeric ratings, and their sum (per operator: the assignee when rated). */
  ratings: "inbox_rating",
  ratingSum: "inbox_rating_sum",
  /** Threads given a label, under `label:<label>`. */
  labelled: "inbox_labelled",
} as const;

/** The label prefix of an operator's counters. */
export const OPERATOR_LABEL = "operator:";
/** The label prefix of a label's counters (labels never hold a `:` either). */
export const LABEL_LABEL = "label:";

const int = z.number().int();

/** A count, its sum and their mean (null without a sample). */
const Mean = z.object({ count: int, sum: z.number(), avg: z.number().nullable() }).strict();
export type Mean = z.infer<typeof Mean>;

const figures = {
  handoffs: int,
  first_response_ms: Mean,
  waiting_ms: Mean,
  resolution_ms: Mean,
  resolved: int,
  auto_resolved: int,
  satisfaction: Mean,
};

const RouteFigures = z
  .object({
    route_name: z.string(),
    /** The route's turns in the window (the runs index), the handoff rate's denominator. */
    turns: int,
    /** handoffs / turns (null without turns). */
    handoff_rate: z.number().nullable(),
    ...figures,
  })
  .strict();
export type RouteFigures = z.infer<typeof RouteFigures>;

const OperatorFigures = z
  .object({ user_id: z.string(), ...figures })
  .strict()
  .describe("An operator's share: handoffs are the operator's takeovers; resolved and satisfaction count the threads the operator held");
export type OperatorFigures = z.infer<typeof OperatorFigures>;

/** The metrics' `inbox` section. */
export const InboxFigures = z
  .object({
    total: RouteFigures.omit({ route_name: true }),
    by_route: z.array(RouteFigures),
    by_operator: z.array(OperatorFigures),
    /** Threads given each label in the window, most first. */
    by_label: z.array(z.object({ label: z.string(), labelled: int }).strict()),
  })
  .strict();
export type InboxFigures = z.infer<typeof InboxFigures>;

/** The mean of `sum` over `count`, rounded to `digits` decimals (null without a sample). Pure. */
function mean(count: number, sum: number, digits: number): Mean {
  const f = 10 ** digits;
  return { count, sum, avg: count ? Math.round((sum / count) * f) / f : null };
}

type Sums = Map<string, number>;

function figuresOf(c: Sums) {
  const n = (name: string) => c.get(name) ?? 0;
  return {
    handoffs: n(INBOX_COUNTER.handoffs),
    first_response_ms: mean(n(INBOX_COUNTER.firstResponses), n(INBOX_COUNTER.firstResponseMs), 0),
    waiting_ms: mean(n(INBOX_COUNTER.replies), n(INBOX_COUNTER.waitMs), 0),
    resolution_ms: mean(n(INBOX_COUNTER.resolutions), n(INBOX_COUNTER.resolutionMs), 0),
    resolved: n(INBOX_COUNTER.resolved),
    auto_resolved: n(INBOX_COUNTER.autoResolved),
    satisfaction: mean(n(INBOX_COUNTER.ratings), n(INBOX_COUNTER.ratingSum), 2),
  };
}

const rate = (handoffs: number, turns: number) => (turns ? Math.round((handoffs / turns) * 10_000) / 10_000 : null);
const byName = <T>(a: [string, T], b: [string, T]) => (a[0] < b[0] ? -1 : 1);

/**
 * The figures from the window's counters (`name`, `label`, summed value) and its turns per route.
 * Every route with turns or an inbox counter is listed, so an agent route shows its handoff rate
 * of 0. Pure.
 */
export function inboxFigures(counters: ReadonlyArray<{ name: string; label: string; n: number }>, turnsByRoute: ReadonlyMap<string, number>): InboxFigures {
  const routes = new Map<string, Sums>();
  const operators = new Map<string, Sums>();
  const total: Sums = new Map();
  const labels = new Map<string, number>();
  for (const r of counters) {
    if (!r.name.startsWith("inbox_")) continue;
    if (r.label.startsWith(LABEL_LABEL)) {
      const label = r.label.slice(LABEL_LABEL.length);
      labels.set(label, (labels.get(label) ?? 0) + r.n);
      continue;
    }
    const operator = r.label.startsWith(OPERATOR_LABEL) ? r.label.slice(OPERATOR_LABEL.length) : null;
    const into = operator === null ? routes : operators;
    const key = operator ?? r.label;
    const sums = into.get(key) ?? new Map<string, number>();
    into.set(key, sums);
    sums.set(r.name, (sums.get(r.name) ?? 0) + r.n);
    if (operator === null) total.set(r.name, (total.get(r.name) ?? 0) + r.n);
  }
  for (const route of turnsByRoute.keys()) if (!routes.has(route)) routes.set(route, new Map());
  let turns = 0;
  for (const n of turnsByRoute.values()) turns += n;
  const t = figuresOf(total);
  return {
    total: { turns, handoff_rate: rate(t.handoffs, turns), ...t },
    by_route: [...routes].sort(byName).map(([route_name, sums]) => {
      const f = figuresOf(sums);
      const routeTurns = turnsByRoute.get(route_name) ?? 0;
      return { route_name, turns: routeTurns, handoff_rate: rate(f.handoffs, routeTurns), ...f };
    }),
    by_operator: [...operators].sort(byName).map(([user_id, sums]) => ({ user_id, ...figuresOf(sums) })),
    by_label: [...labels].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([label, labelled]) => ({ label, labelled })),
  };
}
