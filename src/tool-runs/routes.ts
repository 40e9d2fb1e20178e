/**
 * Background tool runs (spec §4.11 "Tool runs"; platform-facts B3, C "Tool runs";
 * docs/tool-runs.md): submit a run (202 `{run_id}`), read one, list the recent ones. Tagged
 * `tools`; 501 `tool-runs-not-configured` without TOOL_RUNS_STORE_URL (decisions §15).
 *
 * Submitting asks what the agent run door asks (src/targets/routes/agents.ts): `tools:read` to reach the
 * door plus the run grant for the tool (`tool:<name>`, `tools:write` or `*`), so a key granted one
 * tool can run that tool in the background and nothing else. The run executes as the caller's own
 * key, re-checked live when it starts.
 */
import { Hono } from "hono";
import { z } from "zod";
import { fingerprintInLineage, heldBy, holderOf, threadPrincipal } from "../access-control/identity";
import { principalGrantsRun } from "../access-control/principal";
import type { AppEnv } from "../platform/http/app-env";
import { MAX_KWARGS_BYTES, boundedJsonObject } from "../platform/http/bounded-json";
import { badRequest, forbidden, notFound } from "../platform/http/errors";
import { pageSchema, pagingQuery, toPage, toWindow } from "../platform/http/paging";
import { addRoute } from "../platform/http/route";
import { toolRunStub } from "./rpc";
import { authorizeToolRun } from "./execute";
import { listToolRuns } from "./index-store";
import { isMaintenanceTool } from "./maintenance";
import { RunId, ToolRunListItem, ToolRunView, toolRunView } from "./record";
import { RunToolName, argumentProblems, runInputSchema, submitKeyedToolRun, submitToolRun } from "./submit";
import { REPLAYED_HEADER, keyReused } from "../platform/http/idempotency";

export const toolRunsRouter = new Hono<AppEnv>();

const DOOR = { area: "tool-runs", store: "tool-runs" } as const;

addRoute(
  toolRunsRouter,
  {
    method: "post",
    path: "/api/tool-runs",
    links: "mint",
    summary: "Run a tool in the background as the caller's own key",
    description:
      "Answers 202 `{run_id}` once the run is stored; poll `GET /api/tool-runs/{run_id}`. Needs tools:read plus a run grant for the tool (tool:<name>, tools:write or *); maintenance tools (`maintenance.checkpoints_sweep`, `maintenance.prune_expired`) need an admin key. " +
      "Order: body 400 → store 501 → run grant 403 → unknown tool 404 → arguments against the tool's input schema 400 (locations, never values) → the caller's key authorized as the run will be (conditions without a request) 403. " +
      "The run executes as the caller's key, re-read live when it starts: a key revoked, disabled, re-minted or narrowed meanwhile makes the run fail `denied`. A run interrupted by a restart is started again up to TOOL_RUNS_MAX_ATTEMPTS times. A finished run stays readable for TOOL_RUNS_RETENTION_SECONDS. " +
      "With an `Idempotency-Key` (docs/api-notes.md) the run id is derived from the calling key and the key: a retry of the same request answers the same `{run_id}` (`Idempotent-Replayed: true`) and starts nothing, for as long as the run is kept; the key on another request is 422.",
    ...DOOR,
    auth: { tag: "tools", action: "read" },
    body: z.object({ tool_name: RunToolName, arguments: boundedJsonObject(MAX_KWARGS_BYTES).default({}) }).strict(),
    response: z.object({ run_id: z.string() }),
    status: 202,
    errors: [404, 422],
    idempotent: true,
  },
  async (c, { body, principal: p, idempotency }) => {
    // Authorization before the lookup, so a caller without the grant learns nothing about the name.
    if (p.anonymous || !principalGrantsRun(p, "tool", body.tool_name)) throw forbidden();
    if (isMaintenanceTool(body.tool_name) && !p.admin) throw forbidden();
    const schema = await runInputSchema(c.env.DB, body.tool_name);
    if (!schema) throw notFound("tool not found");
    const problems = argumentProblems(schema, body.arguments);
    if (problems) throw badRequest(`invalid body: arguments: ${problems}`);
    const caller = { user_id: p.key.user_id, fingerprint: p.key.key_fingerprint };
    // The run will be authorized like this again when it starts; refuse now what would be denied then.
    const auth = await authorizeToolRun(c.env.DB, caller, body.tool_name, new Date(), { key: p.key, owner: p.owner });
    if (!auth.ok) throw forbidden();
    const request = { tool_name: body.tool_name, arguments: body.arguments, caller, origin: "api", schedule_name: null, slot_at: null } as const;
    if (idempotency) {
      const found = await submitKeyedToolRun(c.env, request, threadPrincipal(p.key), idempotency);
      if (found.kind === "reused") throw keyReused();
      if (found.kind === "replay") c.header(REPLAYED_HEADER, "true");
      return { run_id: found.row.run_id };
    }
    const run_id = crypto.randomUUID();
    await submitToolRun(c.env, { run_id, ...request });
    return { run_id };
  },
);

addRoute(
  toolRunsRouter,
  {
    method: "get",
    path: "/api/tool-runs/{run_id}",
    summary: "Read a background tool run: status, result or error",
    description:
      "Status is queued, running, succeeded or failed. A restricted caller (an owned key) reads only runs that execute as itself, submitted since its key was minted: another identity's run (an earlier holder's of its user_id included) is 403. Unknown or expired run 404. A denied run's reason is shown to admins; others read a fixed text.",
    ...DOOR,
    auth: { tag: "tools" },
    pinnable: false,
    params: z.object({ run_id: RunId }),
    response: ToolRunView,
    errors: [403, 404],
  },
  async (c, { params, principal: p }) => {
    const row = await toolRunStub(c.env, params.run_id).read();
    if (!row || (row.expires_at !== null && row.expires_at <= Date.now())) throw notFound("tool run not found");
    // Its own: executing as its user_id, submitted in its key's lineage, under one of its key's
    // fingerprints (src/access-control/identity.ts): a hook or schedule an earlier holder of the user_id
    // left behind submits runs now, under that holder's fingerprint.
    if (p.restricted) {
      const holder = holderOf(p.key);
      if (!heldBy(holder, row.caller_user_id, row.created_at) || !(await fingerprintInLineage(c.env.DB, holder, row.caller_fingerprint))) throw forbidden();
    }
    return toolRunView(row, p.admin);
  },
);

addRoute(
  toolRunsRouter,
  {
    method: "get",
    path: "/api/tool-runs",
    summary: "List recent background tool runs, newest first",
    description:
      "Filter `tool_name` (exact). Paged (`page`, `pageSize` ≤ 200). A restricted caller (an owned key) lists only runs that execute as itself, submitted since its key was minted. Items come from the D1 index: a run's status there is updated when it ends; read the run for its result.",
    ...DOOR,
    auth: { tag: "tools" },
    pinnable: false,
    query: pagingQuery.extend({ tool_name: RunToolName.optional() }),
    response: pageSchema(ToolRunListItem),
  },
  async (c, { query, principal: p }) => {
    const w = toWindow(query);
    const filter = { tool_name: query.tool_name, caller: p.restricted ? holderOf(p.key) : undefined };
    const { items, total } = await listToolRuns(c.env.DB, filter, Date.now(), w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);
