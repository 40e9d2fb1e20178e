/**
 * Schedules (spec §4.11 "Schedules"; platform-facts B7; docs/schedules.md): cron-timed
 * background tool runs. Tagged `schedules`; 501 `tool-runs-not-configured` without
 * TOOL_RUNS_STORE_URL, since every fire is a background tool run (decisions §15), except the
 * server clock, which needs no store.
 */
import { Hono } from "hono";
import { z } from "zod";
import { heldBy, holderOf } from "../access-control/identity";
import type { AppEnv } from "../platform/http/app-env";
import { forbidden, notFound } from "../platform/http/errors";
import { pageSchema, pagingQuery, toPage, toWindow } from "../platform/http/paging";
import { addRoute } from "../platform/http/route";
import { scheduleStub } from "./rpc";
import { createSchedule } from "./create";
import { deleteListing, listSchedules } from "./listing";
import { ScheduleView } from "./record";
import { ScheduleCreateBody, ScheduleName } from "./spec";

export const schedulesRouter = new Hono<AppEnv>();

const DOOR = { area: "schedules", auth: { tag: "schedules" }, store: "tool-runs" } as const;

addRoute(
  schedulesRouter,
  {
    method: "get",
    path: "/api/schedules/server-datetime",
    summary: "The server's clock, which schedules read (UTC)",
    description: "`now` is ISO-8601 UTC. A schedule's slots are computed in its own `timezone` (UTC when it gives none) from this clock.",
    area: "schedules",
    auth: { tag: "schedules" },
    response: z.object({ now: z.string(), timezone: z.literal("UTC"), epoch_ms: z.number().int(), epoch_seconds: z.number().int() }).strict(),
  },
  () => {
    const ms = Date.now();
    return { now: new Date(ms).toISOString(), timezone: "UTC" as const, epoch_ms: ms, epoch_seconds: Math.floor(ms / 1000) };
  },
);

addRoute(
  schedulesRouter,
  {
    method: "post",
    path: "/api/schedules",
    summary: "Create (or update in place) a schedule that runs a tool as a bound execution key",
    description:
      "`schedule_kwargs`: `cron` (five fields) XOR the crontab fields `minute`, `hour`, `day_of_month`, `month_of_year`, `day_of_week` (each `*` when absent), with an optional IANA `timezone` (default UTC); `{}` runs the tool once now (nothing is kept; the answer carries the run id). " +
      "`execution_key` is bound by the pass-role rule (your own key or one you own; an admin any key: absent 404; non-admin refusals are a uniform 403) and must be allowed to run the tool now (else 403); every fire re-checks it live. Without `name` the name is `<tool_name>_<12 hex>` derived from the spec, so adding the same spec again updates that schedule in place (created false); a given `name` is replaced the same way. " +
      "`state_binding` (optional, spec §2.6): states each fire's run reads before and writes after its dispatch, checked as a target config's binding is (every state declared 404, programs compile 400, templates attached on use; 501 states-not-configured without STATES_STORE_URL); not for maintenance tools. " +
      "Order: body 400 → store 501 → unknown tool 404 → tool_kwargs against the tool's input schema 400 → cadence 400 → pass-role 403/404/400 → the key's run grant 403 → a restricted caller replacing another identity's schedule 403 → state_binding 501/404/400. Missed fires after downtime: at most one catch-up fire (SCHEDULES_CATCH_UP_WINDOW_SECONDS), then the next regular slot.",
    ...DOOR,
    stores: [
      { kind: "tool", at: "tool_name" },
      { kind: "key", at: "execution_key" },
      { kind: "state", at: "state_binding.states[].state" },
    ],
    body: ScheduleCreateBody,
    response: z
      .object({ name: z.string().nullable(), created: z.boolean(), once: z.boolean(), schedule: ScheduleView.nullable(), run_id: z.string().nullable() })
      .strict(),
    errors: [403, 404],
  },
  async (c, { body, principal }) => createSchedule(c.env, c.get("settings"), principal, body, new Date()),
);

addRoute(
  schedulesRouter,
  {
    method: "get",
    path: "/api/schedules",
    summary: "List schedules by name",
    description:
      "Paged (`page`, `pageSize` ≤ 200). A restricted caller (an owned key) lists only the schedules it created. `recent_fires` is left out here; each row's counters come from the schedule's last fire.",
    ...DOOR,
    pinnable: false,
    query: pagingQuery,
    response: pageSchema(ScheduleView),
  },
  async (c, { query, principal: p }) => {
    const w = toWindow(query);
    const { items, total } = await listSchedules(c.env.DB, p.restricted ? holderOf(p.key) : null, w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);

addRoute(
  schedulesRouter,
  {
    method: "delete",
    path: "/api/schedules/{schedule_name}",
    summary: "Delete a schedule: no fire after this",
    description:
      "Unknown name 404. A restricted caller may delete only schedules it created (403). Runs already started go on; their records stay under `GET /api/tool-runs`.",
    ...DOOR,
    params: z.object({ schedule_name: ScheduleName }),
    response: z.object({ removed: z.literal(true), name: z.string() }).strict(),
    errors: [403, 404],
  },
  async (c, { params, principal: p }) => {
    const stub = scheduleStub(c.env, params.schedule_name);
    if (p.restricted) {
      const existing = await stub.read();
      // Its own: made by its user_id in its key's lineage (src/access-control/identity.ts).
      if (existing && !heldBy(holderOf(p.key), existing.created_by, existing.updated_at)) throw forbidden();
    }
    const inObject = await stub.remove();
    const listed = await deleteListing(c.env.DB, params.schedule_name);
    if (!inObject && !listed) throw notFound("schedule not found");
    return { removed: true as const, name: params.schedule_name };
  },
);
