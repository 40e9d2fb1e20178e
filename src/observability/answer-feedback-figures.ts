/**
 * Answer feedback in the metrics (docs/observability.md "Metrics", docs/inbox.md "Answer
 * feedback"): how many answers their customers rated up and down, by route and by the target that
 * answered. The thread that holds a rated record notes per-minute counters
 * (src/conversations/thread/answer-feedback.ts) that ride its listing outbox to the shards, which
 * add them to D1 `run_counters` in their batches; the metrics read them back over the window.
 *
 * Each answer counts once, under its current rating, in the minute it was rated: a new rating
 * takes one back from the minute of the one it replaces, and a cleared rating only takes one back.
 * A window therefore counts the ratings given in it that still stand.
 *
 * A counter's label is `<route>/<target kind>/<target name>`. Route names and target kinds hold no
 * `/`, so the target name is whatever follows the second one. An operator's answer counts under
 * the kind `operator` with an empty name.
 */
import { z } from "zod";

/** The counter names, one per rating. */
export const FEEDBACK_COUNTER: Record<"up" | "down", string> = { up: "answer_feedback_up", down: "answer_feedback_down" };

/** The target kind an operator's answer (or the inbox's own message) is counted under. */
export const OPERATOR_TARGET = "operator";

/** The label of one route's answers by one target. Pure. */
export function feedbackLabel(route: string, targetKind: string, targetName: string): string {
  return `${route}/${targetKind}/${targetName}`;
}

/** The route, target kind and target name of a label (null: not a feedback label). Pure. */
export function parseFeedbackLabel(label: string): { route: string; kind: string; name: string } | null {
  const a = label.indexOf("/");
  const b = a < 0 ? -1 : label.indexOf("/", a + 1);
  if (a <= 0 || b < 0) return null;
  return { route: label.slice(0, a), kind: label.slice(a + 1, b), name: label.slice(b + 1) };
}

const int = z.number().int();
const Counts = { up: int, down: int };

/** The metrics' `answer_feedback` section. */
export const AnswerFeedbackFigures = z
  .object({
    up: int,
    down: int,
    by_route: z.array(z.object({ route_name: z.string(), ...Counts }).strict()),
    /** By the target that answered; an operator's answers are target kind `operator`, name "". */
    by_target: z.array(z.object({ target_kind: z.string(), target_name: z.string(), ...Counts }).strict()),
    by_route_target: z.array(z.object({ route_name: z.string(), target_kind: z.string(), target_name: z.string(), ...Counts }).strict()),
  })
  .strict()
  .describe("Answers rated up and down by their customers in the window, by route and by target");
export type AnswerFeedbackFigures = z.infer<typeof AnswerFeedbackFigures>;

type Tally = { up: number; down: number };

function tally(map: Map<string, Tally>, key: string): Tally {
  const t = map.get(key) ?? { up: 0, down: 0 };
  map.set(key, t);
  return t;
}

/** A count that a rating taken back from a minute outside the window could push below zero. */
const atLeastZero = (t: Tally): Tally => ({ up: Math.max(0, t.up), down: Math.max(0, t.down) });

/** The figures from the window's counters (`name`, `label`, summed value). Pure. */
export function answerFeedbackFigures(counters: ReadonlyArray<{ name: string; label: string; n: number }>): AnswerFeedbackFigures {
  const cells = new Map<string, Tally>();
  for (const r of counters) {
    const rating = r.name === FEEDBACK_COUNTER.up ? "up" : r.name === FEEDBACK_COUNTER.down ? "down" : null;
    if (rating === null || parseFeedbackLabel(r.label) === null) continue;
    tally(cells, r.label)[rating] += r.n;
  }
  const routes = new Map<string, Tally>();
  const targets = new Map<string, Tally>();
  const total: Tally = { up: 0, down: 0 };
  const byRouteTarget: AnswerFeedbackFigures["by_route_target"] = [];
  for (const [label, raw] of [...cells].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const t = atLeastZero(raw);
    const l = parseFeedbackLabel(label);
    if (!l) continue;
    byRouteTarget.push({ route_name: l.route, target_kind: l.kind, target_name: l.name, ...t });
    for (const [map, key] of [
      [routes, l.route],
      [targets, `${l.kind}/${l.name}`],
    ] as const) {
      const into = tally(map, key);
      into.up += t.up;
      into.down += t.down;
    }
    total.up += t.up;
    total.down += t.down;
  }
  const sorted = (m: Map<string, Tally>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    ...total,
    by_route: sorted(routes).map(([route_name, t]) => ({ route_name, ...t })),
    by_target: sorted(targets).map(([key, t]) => {
      const at = key.indexOf("/");
      return { target_kind: key.slice(0, at), target_name: key.slice(at + 1), ...t };
    }),
    by_route_target: byRouteTarget,
  };
}
