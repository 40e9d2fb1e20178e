/**
 * State declarations (spec §2.10, §4.10, §4.11 "States"; platform-facts A3): declare or
 * re-declare, read, list, delete, stats and consumers. Tagged `states`; 501
 * `states-not-configured` without a store. Invalid input is 400, not the reference's 422
 * (decisions §1: "422 only where this file says so"; docs/states.md).
 */
import { Hono } from "hono";
import { z } from "zod";
import { holderOf } from "../../access-control/identity";
import type { AppEnv } from "../../platform/http/app-env";
import { pageSchema, pagingQuery, toPage, toWindow } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";
import { STATES_DOOR } from "../refusals";
import { StateConsumer, consumersOf } from "../consumers";
import { StateDeclarationBody, StateName } from "../declaration";
import { declareState, deleteState, listStates, pruneStates, readState, stateStats } from "../declarations";
import { savesOnState } from "../pending-saves";
import { StateStats, StateView } from "../views";

export const statesRouter = new Hono<AppEnv>();

export const stateParams = z.object({ name: StateName });

addRoute(
  statesRouter,
  {
    method: "get",
    path: "/api/states",
    summary: "List declared states",
    ...STATES_DOOR,
    query: pagingQuery,
    response: pageSchema(StateView),
  },
  async (c, { query }) => {
    const w = toWindow(query);
    const { items, total } = await listStates(c.env, w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);

addRoute(
  statesRouter,
  {
    method: "put",
    path: "/api/states/{name}",
    summary: "Declare or re-declare a state",
    description:
      "The name comes from the path. `schema` is a JSON schema object (draft 2020-12, root type object with at least one property, local $ref only) or a TemplatedText rendering to one. Once the state has records a re-declare may only add top-level properties (409 otherwise), and a subject kind that still has records cannot be removed (409). effective_schema, regimes and updated_at are computed: a non-null value is 400.",
    ...STATES_DOOR,
    params: stateParams,
    body: StateDeclarationBody,
    // `held`: the outstanding pending saves on this state; each is checked against the new declaration when it applies.
    response: StateView.extend({ held: z.array(z.string()) }),
    errors: [404, 409],
  },
  async (c, { params, body }) => ({ ...(await declareState(c.env, params.name, body, Date.now())), held: await savesOnState(c.env.DB, params.name) }),
);

addRoute(
  statesRouter,
  {
    method: "get",
    path: "/api/states/{name}",
    summary: "Read a state with its effective schema, regimes and attachments",
    ...STATES_DOOR,
    params: stateParams,
    response: StateView,
    errors: [404],
  },
  async (c, { params }) => readState(c.env, params.name),
);

addRoute(
  statesRouter,
  {
    method: "delete",
    path: "/api/states/{name}",
    summary: "Delete a state with every record of it",
    ...STATES_DOOR,
    params: stateParams,
    response: z.object({ name: z.string(), deleted: z.literal(true), records: z.number().int() }),
    errors: [404],
  },
  async (c, { params }) => deleteState(c.env, params.name),
);

addRoute(
  statesRouter,
  {
    method: "get",
    path: "/api/states/{name}/stats",
    summary: "Counts of a state's records, by subject kind",
    ...STATES_DOOR,
    params: stateParams,
    response: StateStats,
    errors: [404],
  },
  async (c, { params }) => stateStats(c.env, params.name),
);

addRoute(
  statesRouter,
  {
    method: "get",
    path: "/api/states/{name}/consumers",
    summary: "What binds the state (target conversation configs, presets, hooks and schedules)",
    description:
      "Items by kind: `conversation_config` (`target_kind`, `target_name`), `preset` (`name`, the active `version`), `hook` (`name`), `schedule` (`name`). A restricted caller (an owned key, or anyone through a public pin) sees only the hooks and schedules it registered, as their listings show it.",
    ...STATES_DOOR,
    params: stateParams,
    response: z.object({ items: z.array(StateConsumer), total: z.number().int() }),
    errors: [404],
  },
  async (c, { params, principal }) => {
    await readState(c.env, params.name);
    const items = await consumersOf(c.env.DB, params.name, principal.restricted ? holderOf(principal.key) : null);
    return { items, total: items.length };
  },
);

addRoute(
  statesRouter,
  {
    method: "post",
    path: "/api/state-retention/prune",
    summary: "Sweep records past their state's retention_days (admin only)",
    description:
      "Every declared state drops the records whose last write is older than its retention_days; a state without retention keeps everything. The cron pass runs the same sweep every 15 minutes. Expired records already read as absent before they are swept.",
    area: "states",
    auth: { tag: "states", admin: true },
    store: "states",
    response: z.object({ states: z.number().int(), expired: z.number().int(), by_state: z.record(z.string(), z.number().int()) }),
  },
  async (c) => pruneStates(c.env, Date.now()),
);
