/**
 * Pending state saves (spec §2.12, §3.3, §4.10; platform-facts A4): list, retry a failed
 * save, discard. Tagged `states`; 501 `states-not-configured` without a store. A non-integer id
 * is 400 (decisions §1; the reference answers 422).
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import { STATES_DOOR } from "../refusals";
import { PendingSaveView, RetryResult, discardSave, listSaves, retrySave } from "../pending-saves";

export const statePendingSavesRouter = new Hono<AppEnv>();

const idParams = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, { message: "a pending save id is an integer of at least 1" })
    .transform(Number),
});

addRoute(
  statePendingSavesRouter,
  {
    method: "get",
    path: "/api/state-pending-saves",
    summary: "Pending state saves: outstanding (default) or failed, oldest first",
    ...STATES_DOOR,
    query: z.object({
      status: z.enum(["outstanding", "failed"]).default("outstanding"),
      limit: z.coerce.number().int().min(1).max(200).default(50),
      cursor: z
        .string()
        .regex(/^[0-9]{1,16}$/, { message: "must be a cursor from a previous page" })
        .optional(),
    }),
    response: z.object({ items: z.array(PendingSaveView), next_cursor: z.string().nullable(), outstanding: z.number().int(), failed: z.number().int() }),
  },
  async (c, { query }) => listSaves(c.env.DB, query.status, query.limit, query.cursor ? Number(query.cursor) : null),
);

addRoute(
  statePendingSavesRouter,
  {
    method: "post",
    path: "/api/state-pending-saves/{id}/retry",
    summary: "Requeue a failed pending save and apply it now",
    description:
      "Answers the resulting status: applied (landed whole; the save is gone), pending (it waits behind an older save on the same subject, or the state's object could not be reached), or failed again with last_error. 404 for a missing save, 409 for one that is not failed.",
    ...STATES_DOOR,
    params: idParams,
    response: RetryResult,
    errors: [404, 409],
  },
  async (c, { params }) => retrySave(c.env, params.id, Date.now()),
);

addRoute(
  statePendingSavesRouter,
  {
    method: "delete",
    path: "/api/state-pending-saves/{id}",
    summary: "Discard a pending save (its updates are dropped)",
    ...STATES_DOOR,
    params: idParams,
    response: z.object({ discarded: z.string() }),
    errors: [404],
  },
  async (c, { params }) => discardSave(c.env.DB, params.id),
);
