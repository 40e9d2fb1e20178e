/**
 * The metrics as OpenMetrics text, for Prometheus-style scrapers: `GET
 * /api/observability/metrics` with `Accept: application/openmetrics-text` (or `text/plain`). Pure.
 * Every family is a gauge over the window (`bridge_metrics_window_seconds` says which), except the
 * turn duration, a summary with its quantiles, `_count` and `_sum`. The exposition ends with
 * `# EOF`. Label values are escaped (backslash, double quote, line feed).
 */
import { RUN_OUTCOMES } from "../shared/run-trace";
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
  out.push("# EOF");
  return `${out.join("\n")}\n`;
}
