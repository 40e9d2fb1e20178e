/** The metrics as OpenMetrics text. Pure. */
import { describe, expect, it } from "vitest";
import type { Metrics } from "../../src/observability/metrics";
import { nearestRank } from "../../src/observability/metrics";
import { escapeLabel, metricsFormat, toOpenMetrics } from "../../src/observability/openmetrics";
import { windowSeconds } from "../../src/observability/window";

const none = { ok: 0, error: 0, silent: 0, denied: 0, timeout: 0 };

const sample: Metrics = {
  window: "1h",
  window_seconds: 3600,
  from: "2026-01-01T00:00:00.000Z",
  to: "2026-01-01T01:00:00.000Z",
  own_runs_only: false,
  turns: { total: 3, by_outcome: { ...none, ok: 2, error: 1 }, by_route: [{ route_name: 'r"1\\x', total: 3, by_outcome: { ...none, ok: 2, error: 1 } }] },
  turn_duration_ms: { samples: 3, sum: 60, p50: 20, p95: 30, p99: 30 },
  runs_by_kind: [{ kind: "turn", total: 3, by_outcome: { ...none, ok: 2, error: 1 } }],
  deliveries: {
    attempts: 4,
    failed_attempts: 1,
    failed_records: 1,
    backlog: 2,
    by_route: [{ route_name: "r", attempts: 4, failed_attempts: 1, failed_records: 1, backlog: 2 }],
  },
  rate_cap_sheds: { total: 5, by_route: [{ route_name: "r", count: 5 }] },
  queues: { depth_total: 3, depth_max: 2, threads_queued: 2, by_route: [{ route_name: "r", depth_total: 3, depth_max: 2, threads_queued: 2 }] },
  // The inbox's families have their own test (test/observability/inbox-figures.test.ts).
  inbox: null,
  answer_feedback: {
    up: 3,
    down: 1,
    by_route: [{ route_name: "r", up: 3, down: 1 }],
    by_target: [{ target_kind: "agent", target_name: "helper", up: 3, down: 1 }],
    by_route_target: [{ route_name: "r", target_kind: "agent", target_name: "helper", up: 3, down: 1 }],
  },
};

describe("the OpenMetrics exposition", () => {
  it("declares each family's type, unit and help, escapes labels, and ends with # EOF", () => {
    const text = toOpenMetrics(sample);
    const lines = text.split("\n");
    expect(lines.at(-1)).toBe("");
    expect(lines.at(-2)).toBe("# EOF");
    expect(text).toContain("# TYPE bridge_metrics_window_seconds gauge\n# UNIT bridge_metrics_window_seconds seconds\n");
    expect(text).toContain("bridge_metrics_window_seconds 3600\n");
    expect(text).toContain('bridge_turns{route="r\\"1\\\\x",outcome="ok"} 2\n');
    expect(text).toContain('bridge_turns{route="r\\"1\\\\x",outcome="timeout"} 0\n');
    expect(text).toContain("# TYPE bridge_turn_duration_milliseconds summary\n");
    expect(text).toContain('bridge_turn_duration_milliseconds{quantile="0.5"} 20\n');
    expect(text).toContain('bridge_turn_duration_milliseconds{quantile="0.99"} 30\n');
    expect(text).toContain("bridge_turn_duration_milliseconds_count 3\nbridge_turn_duration_milliseconds_sum 60\n");
    expect(text).toContain('bridge_delivery_backlog{route="r"} 2\n');
    expect(text).toContain('bridge_rate_cap_sheds{route="r"} 5\n');
    expect(text).toContain('bridge_queue_depth_max{route="r"} 2\n');
    expect(text).toContain("# TYPE bridge_answer_feedback gauge\n");
    expect(text).toContain('bridge_answer_feedback{route="r",target_kind="agent",target_name="helper",rating="up"} 3\n');
    expect(text).toContain('bridge_answer_feedback{route="r",target_kind="agent",target_name="helper",rating="down"} 1\n');
    // Every sample line belongs to a family declared before it.
    const declared = new Set<string>();
    for (const l of lines.filter(Boolean)) {
      if (l.startsWith("# TYPE ")) declared.add(l.split(" ")[2]);
      else if (!l.startsWith("#"))
        expect(
          [...declared].some((f) => l.startsWith(f)),
          l,
        ).toBe(true);
    }
  });

  it("omits the deployment-wide families for a restricted caller's figures, and quantiles without samples", () => {
    const text = toOpenMetrics({
      ...sample,
      own_runs_only: true,
      deliveries: null,
      rate_cap_sheds: null,
      queues: null,
      turn_duration_ms: { samples: 0, sum: 0, p50: null, p95: null, p99: null },
    });
    expect(text).not.toContain("bridge_delivery");
    expect(text).not.toContain("bridge_rate_cap_sheds");
    expect(text).not.toContain("{quantile=");
    expect(text).toContain("bridge_turn_duration_milliseconds_count 0\n");
    expect(text.endsWith("# EOF\n")).toBe(true);
  });

  it("escapes backslash, quote and line feed in label values", () => {
    expect(escapeLabel('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
  });

  it("negotiates the format from Accept", () => {
    expect(metricsFormat("application/openmetrics-text; version=1.0.0")).toBe("openmetrics");
    expect(metricsFormat("text/plain")).toBe("text");
    expect(metricsFormat("text/plain;version=0.0.4;q=0.5,*/*;q=0.1")).toBe("text");
    expect(metricsFormat("application/json")).toBe("json");
    expect(metricsFormat("application/json, text/plain")).toBe("json");
    expect(metricsFormat(undefined)).toBe("json");
  });
});

describe("the window and the percentiles", () => {
  it("reads a number and a unit, 1 minute to 7 days", () => {
    expect(windowSeconds("1h")).toBe(3600);
    expect(windowSeconds("90s")).toBe(90);
    expect(windowSeconds("15m")).toBe(900);
    expect(windowSeconds("7d")).toBe(604_800);
    for (const bad of ["59s", "8d", "1w", "h", "1.5h", "", " 1h", "-1h", "99999999s"]) expect(windowSeconds(bad), bad).toBeNull();
  });

  it("nearest rank: the smallest value with at least p% of the samples at or below it", () => {
    expect(nearestRank([], 50)).toBeNull();
    expect(nearestRank([7], 99)).toBe(7);
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([nearestRank(hundred, 50), nearestRank(hundred, 95), nearestRank(hundred, 99)]).toEqual([50, 95, 99]);
    expect([nearestRank([1, 2, 3], 50), nearestRank([1, 2, 3], 95)]).toEqual([2, 3]);
  });
});
