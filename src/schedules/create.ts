/**
 * Creating a schedule (docs/schedules.md "Creating"). Order, each step refusing before
 * anything is written: the body (400, the route pipeline) → the store (501) → the tool exists (404)
 * → its kwargs match the tool's input schema (400) → the cadence compiles (400) → pass-role binds
 * the execution key (decisions §2: a non-admin gets a uniform 403 for a key absent or not its own;
 * an admin 404 for an absent key; a condition reading `.request` 400) → the bound key may run the
 * tool now (the live authorizer a fire uses; 403) → a restricted caller may not replace another
 * identity's schedule (403) → a `state_binding` is checked as a target config's is (501
 * `states-not-configured` without the states store; undeclared state 404; a program that does not
 * compile 400; its templates attached on use) → write.
 *
 * Empty `schedule_kwargs` runs the tool once, now, as a background run of the bound key, and keeps
 * no schedule (nothing recurs, so nothing is listed; the answer carries the run id).
 */
import { heldBy, holderOf } from "../access-control/identity";
import { bindExecutionKey } from "../access-control/pass-role";
import type { Principal } from "../access-control/principal";
import { scheduleStub } from "./rpc";
import type { Env } from "../platform/env";
import type { JsonObject } from "../platform/http/bounded-json";
import { HttpError, badRequest, forbidden, notFound } from "../platform/http/errors";
import type { Settings } from "../platform/settings/settings";
import { checkRunBinding } from "../tool-runs/binding-check";
import { assertMayBind } from "../states/binding-refs";
import { authorizeToolRun } from "../tool-runs/execute";
import { argumentProblems, runInputSchema, submitToolRun } from "../tool-runs/submit";
import { type ScheduleView, scheduleView } from "./record";
import { type ScheduleCreateBody, cadenceOf, derivedScheduleName } from "./spec";

export interface CreateAnswer {
  name: string | null;
  /** A new schedule (false: updated in place; a run-once creates none). */
  created: boolean;
  once: boolean;
  schedule: ScheduleView | null;
  /** The run a run-once started (null for a recurring schedule). */
  run_id: string | null;
}

export async function createSchedule(env: Env, settings: Settings, caller: Principal, body: ScheduleCreateBody, now: Date): Promise<CreateAnswer> {
  const db = env.DB;
  const schema = await runInputSchema(db, body.tool_name);
  if (!schema) throw notFound("tool not found");
  const problems = argumentProblems(schema, body.tool_kwargs);
  if (problems) throw badRequest(`invalid body: tool_kwargs: ${problems}`);
  const cadence = cadenceOf(body.schedule_kwargs);
  if ("error" in cadence) throw badRequest(`invalid body: ${cadence.error}`);
  if (cadence.kind === "cron" && cadence.slots.nextAfter(now.getTime()) === null) {
    throw badRequest("invalid body: schedule_kwargs: the expression never fires (no date matches it)");
  }

  const fingerprint = await bindExecutionKey(db, caller, body.execution_key);
  const key = { user_id: body.execution_key, fingerprint };
  const auth = await authorizeToolRun(db, key, body.tool_name, now);
  // The caller may bind the key (its own, one it owns, or as an admin), so it may learn this much.
  if (!auth.ok) throw new HttpError(403, "execution_key may not run this tool");

  const state_binding = body.state_binding ?? null;
  // The binding runs later under the execution key: bounded by the caller's own states grants.
  assertMayBind(caller, state_binding);
  if (cadence.kind === "once") {
    await checkRunBinding(env, settings, state_binding, now);
    const run_id = crypto.randomUUID();
    await submitToolRun(env, {
      run_id,
      tool_name: body.tool_name,
      arguments: body.tool_kwargs,
      caller: key,
      origin: "schedule",
      schedule_name: body.name ?? null,
      slot_at: now.getTime(),
      state_binding,
      binding_by: caller.key.user_id,
    });
    return { name: body.name ?? null, created: true, once: true, schedule: null, run_id };
  }

  const name = body.name ?? (await derivedScheduleName(body.tool_name, body.tool_kwargs, cadence.expression, cadence.timezone));
  const stub = scheduleStub(env, name);
  if (caller.restricted) {
    const existing = await stub.read();
    // Its own: made by its user_id in its key's lineage (`updated_at` is set with `created_by`).
    if (existing && !heldBy(holderOf(caller.key), existing.created_by, existing.updated_at)) throw forbidden();
  }
  await checkRunBinding(env, settings, state_binding, now);
  const { created, state } = await stub.put({
    name,
    tool_name: body.tool_name,
    tool_kwargs: body.tool_kwargs,
    schedule_kwargs: body.schedule_kwargs as JsonObject,
    cron: cadence.expression,
    timezone: cadence.timezone,
    execution_key: body.execution_key,
    execution_key_fingerprint: fingerprint,
    created_by: caller.key.user_id,
    state_binding,
  });
  return { name, created, once: false, schedule: scheduleView(state), run_id: null };
}
