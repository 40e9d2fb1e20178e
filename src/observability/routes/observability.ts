/**
 * Observability (docs/observability.md): the runs index paged for dashboards, its CSV
 * export, one run's trace (and its JSON download), and the metrics over a window, as JSON or as
 * OpenMetrics text. Tagged `observability`, all reads. A restricted caller (an owned key) sees only
 * the runs it called; error detail in a trace is for admins only.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import { type Holder, fingerprintInLineage, holderOf } from "../../access-control/identity";
import type { Principal } from "../../access-control/principal";
import { RunTrace } from "../../shared/run-trace";
import { toolRunStub } from "../../tool-runs/rpc";
import type { Env } from "../../platform/env";
import type { AppEnv } from "../../platform/http/app-env";
import { notFound } from "../../platform/http/errors";
import { MAX_PAGE, pageSchema } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";
import { Metrics, readMetrics } from "../metrics";
import { OPENMETRICS_TYPE, PROMETHEUS_TEXT_TYPE, metricsFormat, toOpenMetrics } from "../openmetrics";
import { DEFAULT_WINDOW, windowQuery, windowSeconds } from "../window";
import { RUN_CSV_COLUMNS, runsCsv } from "../runs-csv";
import { callerFilter, runsPage } from "../runs/caller";
import { RunView, listRuns, runFilterQuery } from "../runs/query";
import { findTrace, mayRead, traceFileName, traceFor } from "../../conversations/run-traces";
import { must } from "../../platform/must";

export const observabilityRouter = new Hono<AppEnv>();

const AREA = "observability";
const READ = { tag: "observability" } as const;

/** Observability's page size bound (platform facts D: capped at 100; larger values clamp). */
export const OBSERVABILITY_MAX_PAGE_SIZE = 100;

const intString = (name: string) =>
  z
    .string()
    .regex(/^\d+$/, { message: `${name} must be a positive integer` })
    .transform(Number);

const observabilityPaging = z.object({
  page: intString("page")
    .refine((n) => n >= 1 && n <= MAX_PAGE, { message: `page must be between 1 and ${MAX_PAGE}` })
    .optional(),
  pageSize: intString("pageSize")
    .refine((n) => n >= 1, { message: "pageSize must be at least 1" })
    .transform((n) => Math.min(n, OBSERVABILITY_MAX_PAGE_SIZE))
    .optional(),
});

addRoute(
  observabilityRouter,
  {
    method: "get",
    path: "/api/observability/runs",
    summary: "List runs for monitoring (paged, pageSize at most 100)",
    description:
      "The runs index of `GET /api/runs` with the same filters (`preset`, `version`, `user`, `session`, `interaction`, `outcome`, `kind`, `from`, `to`), newest first; `pageSize` defaults to 50 and clamps at 100. A restricted caller sees only the runs it called.",
    area: AREA,
    auth: READ,
    query: observabilityPaging.extend(runFilterQuery.shape),
    response: pageSchema(RunView),
  },
  async (c, { query, principal }) => {
    return runsPage(c.env.DB, query, principal);
  },
);

/** Most rows one CSV export carries. */
export const MAX_EXPORT_ROWS = 10_000;

addRoute(
  observabilityRouter,
  {
    method: "get",
    path: "/api/observability/runs/export",
    summary: "Export runs as CSV (RFC 4180)",
    description: `The filtered runs, newest first, as \`text/csv\` with \`content-disposition: attachment; filename="runs-<timestamp>.csv"\` (no \`{data}\` envelope). Columns: ${RUN_CSV_COLUMNS.join(", ")}. RFC 4180 quoting, CRLF line ends; a cell starting with =, +, -, @, a tab or CR is prefixed with ' so a spreadsheet never runs it as a formula. \`limit\` rows at most (default 1000, at most ${MAX_EXPORT_ROWS}); \`x-runs-truncated: true\` says more matched. A restricted caller exports only the runs it called.`,
    area: AREA,
    auth: READ,
    query: runFilterQuery.extend({
      limit: intString("limit")
        .refine((n) => n >= 1 && n <= MAX_EXPORT_ROWS, { message: `limit must be between 1 and ${MAX_EXPORT_ROWS}` })
        .optional(),
    }),
    produces: "text/csv",
  },
  async (c, { query, principal }) => {
    const filter = callerFilter(query, principal);
    const limit = query.limit ?? 1000;
    const { items, total } = await listRuns(c.env.DB, filter, 0, limit);
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    return new Response(runsCsv(items), {
      status: 200,
      headers: {
        "content-type": "text/csv; charset=utf-8",
        "content-disposition": `attachment; filename="runs-${stamp}.csv"`,
        "cache-control": "no-store",
        "x-runs-truncated": total > items.length ? "true" : "false",
      },
    });
  },
);

const traceParams = z.object({ trace_id: z.string().min(1, { message: "must not be blank" }).max(200, { message: "must be at most 200 characters" }) });

/**
 * A background tool run's trace (a hook fire, a schedule fire, the tool-runs door) is a restricted
 * caller's only if the run ran under one of its own key's fingerprints: a hook or schedule an
 * earlier holder of the user_id left behind still submits runs under that holder's fingerprint,
 * stamped with the user_id and the time of now (src/access-control/identity.ts). Read only for such a
 * caller, and only for those traces; once the run's own record expired, the trace's time decides.
 */
async function backgroundRunOfLineage(env: Env, trace: RunTrace, holder: Holder): Promise<boolean> {
  if ((trace.kind !== "tool_run" && trace.kind !== "hook_fire") || trace.trigger === "direct") return true;
  const row = await toolRunStub(env, trace.trace_id).read();
  return row === null || fingerprintInLineage(env.DB, holder, row.caller_fingerprint);
}

/** The trace as the caller may see it, or 404 (unknown, expired, or another identity's for a restricted caller). */
async function readableTrace(c: Context<AppEnv>, principal: Principal, traceId: string): Promise<RunTrace> {
  const trace = await findTrace(c.env, traceId, Date.now());
  const caller = { restricted: principal.restricted, ...holderOf(principal.key) };
  if (!trace || !mayRead(trace, caller)) throw notFound("trace not found");
  if (caller.restricted && !(await backgroundRunOfLineage(c.env, trace, caller))) throw notFound("trace not found");
  return traceFor(trace, principal.admin);
}

const TRACE_DESCRIPTION =
  "The run's full trace: kind, trigger, target, route and thread, attributed user and calling principal, start, duration, outcome, steps (tool dispatches, model and agent endpoint calls with their timings and outcomes), input and output (a turn's are its record's inbound and answer, gone once the record expires). `error` (the run's and each step's) is admin-only detail: null for any other caller. 404 for an unknown, expired, erased or pruned trace, and for a restricted caller's read of a run it did not call.";

addRoute(
  observabilityRouter,
  {
    method: "get",
    path: "/api/observability/runs/{trace_id}/trace",
    summary: "Read one run's trace",
    description: TRACE_DESCRIPTION,
    area: AREA,
    auth: READ,
    params: traceParams,
    response: RunTrace,
    errors: [404],
  },
  async (c, { params, principal }) => readableTrace(c, principal, params.trace_id),
);

addRoute(
  observabilityRouter,
  {
    method: "get",
    path: "/api/observability/runs/{trace_id}/trace/export",
    summary: "Download one run's trace as a JSON file",
    description: `${TRACE_DESCRIPTION} Answered as the bare trace (no \`{data}\` envelope) with \`content-disposition: attachment; filename="trace-<trace_id>.json"\` (characters outside A-Z, a-z, 0-9, '.', '_' and '-' become '_').`,
    area: AREA,
    auth: READ,
    params: traceParams,
    produces: "application/json",
    errors: [404],
  },
  async (c, { params, principal }) => {
    const trace = await readableTrace(c, principal, params.trace_id);
    return new Response(JSON.stringify(trace, null, 2), {
      status: 200,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "content-disposition": `attachment; filename="${traceFileName(params.trace_id)}"`,
        "cache-control": "no-store",
      },
    });
  },
);

addRoute(
  observabilityRouter,
  {
    method: "get",
    path: "/api/observability/metrics",
    summary: "Metrics over a window (JSON, or OpenMetrics text for scrapers)",
    description:
      "`window` (default 1h): a number and a unit s, m, h or d, from 1 minute to 7 days; the figures cover the window ending now. Turns by outcome and route, nearest-rank p50/p95/p99 of turn duration, runs by kind and outcome, delivery attempts and failed attempts, records failed for good, the delivery backlog (records waiting for delivery now), rate-cap sheds (refused rate tokens at every door), the thread queue depths now, and the inbox's team figures by route and by operator (`inbox`: handoffs and the handoff rate per turn, first response, waiting and resolution times as count, sum and mean, resolved and auto-resolved threads, satisfaction), and the answers their customers rated (`answer_feedback`: up and down by route and by the target that answered). Every figure comes from the batched index and trails the threads by about a second; counters are per minute, so the window's edges are whole minutes. A restricted caller gets only its own runs' figures (the deployment-wide ones are null). With `Accept: application/openmetrics-text` (or `text/plain`) the answer is the OpenMetrics exposition, ending `# EOF`, for Prometheus-style scrapers.",
    area: AREA,
    auth: READ,
    query: z.object({ window: windowQuery }),
    response: Metrics,
  },
  async (c, { query, principal }) => {
    const window = query.window ?? DEFAULT_WINDOW;
    const own = principal.restricted ? holderOf(principal.key) : null;
    const metrics = await readMetrics(c.env.DB, window, must(windowSeconds(window), "the seconds of a validated window"), Date.now(), own);
    const format = metricsFormat(c.req.header("accept"));
    if (format === "json") return metrics;
    return new Response(toOpenMetrics(metrics), {
      status: 200,
      headers: { "content-type": format === "openmetrics" ? OPENMETRICS_TYPE : PROMETHEUS_TEXT_TYPE, "cache-control": "no-store" },
    });
  },
);
