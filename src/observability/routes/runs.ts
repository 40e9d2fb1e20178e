/**
 * The runs index (docs/observability.md): `GET /api/runs` lists every run (bridge turns,
 * agent runs, tool runs, hook fires) newest first, filtered and paged like the other doors;
 * `POST /api/runs/prune` (admin) removes runs by age. Tagged `runs`. A restricted caller (an owned
 * key) sees only the runs it called (principal = its key).
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { badRequest } from "../../platform/http/errors";
import { pageSchema, pagingQuery } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";
import { RunView, runFilterQuery } from "../runs/query";
import { pruneRuns } from "../runs/prune";
import { runsPage } from "../runs/caller";

export const runsRouter = new Hono<AppEnv>();

const AREA = "runs";

addRoute(
  runsRouter,
  {
    method: "get",
    path: "/api/runs",
    summary: "List runs (turns, agent runs, tool runs), newest first",
    description:
      "Filters: `preset` (the target's name: a preset, tool or agent), `version` (a preset's version), `user` (the user the run is attributed to: a linked person's person_id, else the door address; a tool run's caller), `session` (the thread id), `interaction` (a turn's message id, a tool run's run id, a resumed agent run's interaction id), `outcome` (ok, error, silent, denied, timeout), `kind` (turn, agent_run, tool_run, hook_fire), `from` and `to` (ISO 8601 instants; runs started in [from, to)). Paged with `page` and `pageSize` (default 50, larger than 200 clamps). A restricted caller (an owned key) sees only the runs it called. The index trails the runs by about a second (the shards write it in batches). No input, output or error text here: see `GET /api/observability/runs/{trace_id}/trace`.",
    area: AREA,
    auth: { tag: "runs" },
    query: pagingQuery.extend(runFilterQuery.shape),
    response: pageSchema(RunView),
  },
  async (c, { query, principal }) => {
    return runsPage(c.env.DB, query, principal);
  },
);

const PruneBody = z
  .object({
    older_than_seconds: z
      .number({ error: "must be a whole number of seconds" })
      .int({ message: "must be a whole number of seconds" })
      .min(60, { message: "must be at least 60" })
      .max(315_360_000, { message: "must be at most 315360000 (10 years)" }),
  })
  .strict();

addRoute(
  runsRouter,
  {
    method: "post",
    path: "/api/runs/prune",
    summary: "Prune runs older than an age (admin), with counts",
    description:
      "Removes every run that started more than `older_than_seconds` ago (at least 60): its index row, and the trace of a run outside the bridge (kept by the shards). A turn's trace stays in its thread until its record expires, unreachable once its index row is gone. Answers `{runs_removed, traces_removed, before}`.",
    area: AREA,
    auth: { tag: "runs", admin: true },
    body: PruneBody,
    response: z.object({ runs_removed: z.number().int(), traces_removed: z.number().int(), before: z.string() }),
  },
  async (c, { body }) => {
    const before = Date.now() - body.older_than_seconds * 1000;
    if (!Number.isFinite(before)) throw badRequest("invalid body: older_than_seconds: out of range");
    const counts = await pruneRuns(c.env, before);
    return { ...counts, before: new Date(before).toISOString() };
  },
);
