/**
 * The metrics as OpenMetrics text, for Prometheus-style scrapers: `GET
 * /api/observability/metrics` with `Accept: application/openmetrics-text` (or `text/plain`). Pure.
 * Every family is a gauge over the window (`bridge_metrics_window_seconds` says which), except the
 * turn duration, a summary with its quantiles, `_count` and `_sum`, and the inbox's times and
 * satisfaction, summaries with only `_count` and `_sum` (a scraper divides them for the mean). The
 * exposition ends with `# EOF`. Label values are escaped (backslash, double quote, line feed).
 */
import { RUN_OUTCOMES } from "../shared/run-trace";
import type { InboxFigures, Mean, OperatorFigures, RouteFigures } from "./inbox-figures";
import type { Metrics } from "./metrics";

/** The content types the door answers this text with. */
export const OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8";
export const PROMETHEUS_TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Which form `accept` asks for: OpenMetrics, Prometheus text, or the JSON envelope. Pure. */
export function metricsFormat(accept: string | undefined): "openmetrics" | "text" | "json" {
  const a = (accept ?? "").toLowerCase();
  if (a.includes("application/openmetrics-text")) return "openmetrics";
  if (a.includes("text/plain") && !a.includes("application/json")) return "text";
  return "json";
}

/** A label value, escaped. */
export function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

type Labels = Record<string, string>;
type Sample = { suffix?: string; labels?: Labels; value: number };

function line(name: string, s: Sample): string {
  const labels =
    s.labels && Object.keys(s.labels).length
      ? `{${Object.entries(s.labels)
          .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
          .join(",")}}`
      : "";
  return `${name}${s.suffix ?? ""}${labels} ${s.value}`;
}

function family(out: string[], name: string, type: "gauge" | "summary", help: string, unit: string | null, samples: Sample[]): void {
  out.push(`# TYPE ${name} ${type}`);
  if (unit) out.push(`# UNIT ${name} ${unit}`);
  out.push(`# HELP ${name} ${help}`);
  for (const s of samples) out.push(line(name, s));
}

/** A mean's `_count` and `_sum` samples under `labels`. */
const meanSamples = (labels: Labels, m: Mean): Sample[] => [
  { suffix: "_count", labels, value: m.count },
  { suffix: "_sum", labels, value: m.sum },
];

/** The inbox's families: by route (`bridge_inbox_*{route}`), then by operator (`bridge_inbox_operator_*{operator}`). */
function inboxFamilies(out: string[], inbox: InboxFigures): void {
  const route = (r: RouteFigures): Labels => ({ route: r.route_name });
  const operator = (o: OperatorFigures): Labels => ({ operator: o.user_id });
  family(
    out,
    "bridge_inbox_handoffs",
    "gauge",
    "Threads handed to a human in the window (the agent's handoff, an operator's takeover), by route.",
    null,
    inbox.by_route.map((r) => ({ labels: route(r), value: r.handoffs })),
  );
  family(
    out,
    "bridge_inbox_handoff_ratio",
    "gauge",
    "Handoffs per turn in the window, by route (routes with turns only).",
    null,
    inbox.by_route.flatMap((r) => (r.handoff_rate === null ? [] : [{ labels: route(r), value: r.handoff_rate }])),
  );
  const times = [
    ["first_response", "first_response_ms", "From a human taking the thread to its first operator reply"],
    ["wait", "waiting_ms", "How long a customer waited before an operator's reply ended the wait"],
    ["resolution", "resolution_ms", "From a human taking the thread to its resolve"],
  ] as const;
  for (const [name, field, help] of times) {
    family(
      out,
      `bridge_inbox_${name}_milliseconds`,
      "summary",
      `${help}, by route.`,
      "milliseconds",
      inbox.by_route.flatMap((r) => meanSamples(route(r), r[field])),
    );
  }
  family(
    out,
    "bridge_inbox_labelled",
    "gauge",
    "Threads given each label in the window, by label.",
    null,
    inbox.by_label.map((l) => ({ labels: { label: l.label }, value: l.labelled })),
  );
  family(
    out,
    "bridge_inbox_resolved",
    "gauge",
    "Threads resolved in the window, by route.",
    null,
    inbox.by_route.map((r) => ({ labels: route(r), value: r.resolved })),
  );
  family(
    out,
    "bridge_inbox_auto_resolved",
    "gauge",
    "Threads resolved by their idle timer in the window, by route.",
    null,
    inbox.by_route.map((r) => ({ labels: route(r), value: r.auto_resolved })),
  );
  family(
    out,
    "bridge_inbox_satisfaction",
    "summary",
    "Customer ratings in the window, by route.",
    null,
    inbox.by_route.flatMap((r) => meanSamples(route(r), r.satisfaction)),
  );

  family(
    out,
    "bridge_inbox_operator_handoffs",
    "gauge",
    "Threads an operator took over from the agent in the window.",
    null,
    inbox.by_operator.map((o) => ({ labels: operator(o), value: o.handoffs })),
  );
  for (const [name, field, help] of times) {
    family(
      out,
      `bridge_inbox_operator_${name}_milliseconds`,
      "summary",
      `${help}, by the operator who replied or held the thread.`,
      "milliseconds",
      inbox.by_operator.flatMap((o) => meanSamples(operator(o), o[field])),
    );
  }
  family(
    out,
    "bridge_inbox_operator_resolved",
    "gauge",
    "Threads resolved in the window, by the operator who held them (else who resolved them).",
    null,
    inbox.by_operator.map((o) => ({ labels: operator(o), value: o.resolved })),
  );
  family(
    out,
    "bridge_inbox_operator_auto_resolved",
    "gauge",
    "Threads an operator held that resolved by their idle timer in the window.",
    null,
    inbox.by_operator.map((o) => ({ labels: operator(o), value: o.auto_resolved })),
  );
  family(
    out,
    "bridge_inbox_operator_satisfaction",
    "summary",
    "Customer ratings in the window, by the operator who held the thread.",
    null,
    inbox.by_operator.flatMap((o) => meanSamples(operator(o), o.satisfaction)),
  );
}

/** The exposition of `m`. */
export function toOpenMetrics(m: Metrics): string {
  const out: string[] = [];
  family(out, "bridge_metrics_window_seconds", "gauge", "The window the other figures cover, ending now.", "seconds", [{ value: m.window_seconds }]);
  family(
    out,
    "bridge_turns",
    "gauge",
    "Bridge turns started in the window, by route and outcome.",
    null,
    m.turns.by_route.flatMap((r) => RUN_OUTCOMES.map((o) => ({ labels: { route: r.route_name, outcome: o }, value: r.by_outcome[o] }))),
  );
  const d = m.turn_duration_ms;
  family(out, "bridge_turn_duration_milliseconds", "summary", "Turn duration over the window (nearest-rank quantiles).", "milliseconds", [
    ...(d.samples
      ? [
          { labels: { quantile: "0.5" }, value: d.p50 ?? 0 },
          { labels: { quantile: "0.95" }, value: d.p95 ?? 0 },
          { labels: { quantile: "0.99" }, value: d.p99 ?? 0 },
        ]
      : []),
    { suffix: "_count", value: d.samples },
    { suffix: "_sum", value: d.sum },
  ]);
  family(
    out,
    "bridge_runs",
    "gauge",
    "Runs of every kind started in the window, by kind and outcome.",
    null,
    m.runs_by_kind.flatMap((k) => RUN_OUTCOMES.map((o) => ({ labels: { kind: k.kind, outcome: o }, value: k.by_outcome[o] }))),
  );
  if (m.deliveries) {
    const by = m.deliveries.by_route;
    family(
      out,
      "bridge_delivery_attempts",
      "gauge",
      "Delivery attempts (callbacks, channel sends) in the window, by route.",
      null,
      by.map((r) => ({ labels: { route: r.route_name }, value: r.attempts })),
    );
    family(
      out,
      "bridge_delivery_attempt_failures",
      "gauge",
      "Delivery attempts that failed in the window, by route.",
      null,
      by.map((r) => ({ labels: { route: r.route_name }, value: r.failed_attempts })),
    );
    family(
      out,
      "bridge_delivery_failed_records",
      "gauge",
      "Records whose delivery failed for good in the window, by route.",
      null,
      by.map((r) => ({ labels: { route: r.route_name }, value: r.failed_records })),
    );
    family(
      out,
      "bridge_delivery_backlog",
      "gauge",
      "Records waiting for delivery now, by route.",
      null,
      by.map((r) => ({ labels: { route: r.route_name }, value: r.backlog })),
    );
  }
  if (m.rate_cap_sheds) {
    family(
      out,
      "bridge_rate_cap_sheds",
      "gauge",
      "Inbound messages refused by the rate cap in the window, by route.",
      null,
      m.rate_cap_sheds.by_route.map((r) => ({ labels: { route: r.route_name }, value: r.count })),
    );
  }
  if (m.queues) {
    family(
      out,
      "bridge_queue_depth",
      "gauge",
      "Turns queued or running now, summed over a route's threads.",
      null,
      m.queues.by_route.map((r) => ({ labels: { route: r.route_name }, value: r.depth_total })),
    );
    family(
      out,
      "bridge_queue_depth_max",
      "gauge",
      "The deepest thread FIFO of a route now.",
      null,
      m.queues.by_route.map((r) => ({ labels: { route: r.route_name }, value: r.depth_max })),
    );
  }
  if (m.inbox) inboxFamilies(out, m.inbox);
  if (m.answer_feedback) {
    family(
      out,
      "bridge_answer_feedback",
      "gauge",
      "Answers their customers rated in the window, by route, the target that answered (kind operator: an operator's answers) and rating.",
      null,
      m.answer_feedback.by_route_target.flatMap((r) =>
        (["up", "down"] as const).map((rating) => ({
          labels: { route: r.route_name, target_kind: r.target_kind, target_name: r.target_name, rating },
          value: r[rating],
        })),
      ),
    );
  }
  out.push("# EOF");
  return `${out.join("\n")}\n`;
}
