/**
 * State binding at turn time (spec §2.6; bridge-facts §7), for tool turns whose target
 * config carries a `state_binding`. Before dispatch, for each attach in order:
 *
 *   1. `scope_expr` (TemplatedText rendered with its kwargs, then jq over the run input): absent
 *      means engaged, `false` skips the state for this turn, anything but a boolean is an error;
 *   2. `subject_expr` (same): a full subject object, or a key string that takes the route's target
 *      and the state's default subject kind (`.turn.subject.thread`, `.turn.subject.person`);
 *   3. the subject's record is read (one StateStore call, which also brings the attachments);
 *   4. `input_injections` in order: a named input program over the record, or a custom jq over
 *      `{record, input}`; the value lands at `input[into]`.
 *
 * After dispatch, for each engaged attach (scope re-evaluated over the final input), `updates` in
 * order: `op_id` over `{output, input}` (a string or null); a named update program over `{record,
 * input}` whose input is the `adapter` over `{output, input}` (else the run input), or a custom jq
 * over `{record, output, input}` answering the op batch. Each batch is written through the record
 * write path, computed from the version it read (retried from a newer one when another write got
 * there first). Every failure throws BindingError, which the turn reports as its error outcome.
 */
import { z } from "zod";
import { type StateRecord, type Subject, type WriteOrigin, stateStoreStub } from "./rpc";
import type { Env } from "../platform/env";
import type { JsonObject, JsonValue } from "../platform/http/bounded-json";
import { renderTemplatedText, type TemplatedText } from "../templates/templated-text";
import type { StoredAttachment } from "./effective";
import { checkPersonSubject } from "./records";
import type { StateAttach, StateBinding } from "../shared/state-binding";
import { TemplateJqError, opsFrom, resolveProgram, runInputProgram, runProgram, runUpdateProgram } from "./template-jq";
import { Subject as SubjectSchema } from "./views";
import { must } from "../platform/must";

/** A binding failure: the turn's error outcome carries this detail (admins only). */
export class BindingError extends Error {}

/** The binding's target (the route's), and the person its door already resolved for that target, if any. */
export interface BindingTarget {
  target_kind: Subject["target_kind"];
  target_name: string;
  person?: string | null;
}

/** An attach that is engaged for this turn, with what its updates need. */
export interface EngagedAttach {
  attach: StateAttach;
  subject: Subject;
  record: StateRecord | null;
  attachments: StoredAttachment[];
}

function fail(where: string, err: unknown): never {
  if (err instanceof BindingError) throw err;
  if (err instanceof TemplateJqError) throw new BindingError(`${where}: ${err.message}`);
  if (err instanceof Error && "status" in err) throw new BindingError(`${where}: ${err.message}`);
  throw err;
}

async function render(env: Env, t: TemplatedText, where: string): Promise<string> {
  try {
    return await renderTemplatedText(env.DB, t);
  } catch (err) {
    return fail(`${where} could not be rendered`, err);
  }
}

/** Renders `t` and runs it over `input`, wanting exactly one output. */
async function evalOne(env: Env, t: TemplatedText, input: unknown, where: string): Promise<unknown> {
  const program = await render(env, t, where);
  const out = await runProgram(program, input, where).catch((err) => fail(where, err));
  if (out.length !== 1) throw new BindingError(`${where} must emit exactly one value; it emitted ${out.length}`);
  return out[0];
}

const SubjectSpec = z.union([SubjectSchema.strict(), z.string().trim().min(1).max(512)]);

function stateWhere(attach: StateAttach, what: string): string {
  return `state binding (${attach.state}) ${what}`;
}

async function engaged(env: Env, attach: StateAttach, input: unknown): Promise<boolean> {
  if (!attach.scope_expr) return true;
  const v = await evalOne(env, attach.scope_expr, input, stateWhere(attach, "scope_expr"));
  if (typeof v !== "boolean") throw new BindingError(`${stateWhere(attach, "scope_expr")} must answer true or false`);
  return v;
}

/** Steps 1–4: the engaged attaches and the run input with every injection applied. */
export async function prepareStates(
  env: Env,
  binding: StateBinding,
  target: BindingTarget,
  kwargs: JsonObject,
  nowMs: number,
): Promise<{ input: JsonObject; engaged: EngagedAttach[] }> {
  const input: JsonObject = structuredClone(kwargs);
  const out: EngagedAttach[] = [];
  for (const attach of binding.states) {
    if (!(await engaged(env, attach, input))) continue;
    const spec = SubjectSpec.safeParse(await evalOne(env, attach.subject_expr, input, stateWhere(attach, "subject_expr")));
    if (!spec.success)
      throw new BindingError(`${stateWhere(attach, "subject_expr")} must answer a subject {target_kind, target_name, kind, key} or a non-blank key`);
    let read: Awaited<ReturnType<ReturnType<typeof stateStoreStub>["bindingRead"]>>;
    try {
      read = await stateStoreStub(env, attach.state).bindingRead(
        typeof spec.data === "string" ? { key: spec.data, target_kind: target.target_kind, target_name: target.target_name } : spec.data,
        nowMs,
      );
    } catch (err) {
      // Before dispatch nothing has happened yet: a record that cannot be read fails the turn loudly.
      console.error("state binding: the state's object could not be read", err);
      throw new BindingError(`${stateWhere(attach, "read")}: the state's object could not be reached`);
    }
    if (!read.ok) throw new BindingError(`${stateWhere(attach, "read")}: ${read.error}`);
    // The turn's own person was resolved by its door for this target: only another key needs the check.
    const ownPerson =
      read.subject.kind === "person" &&
      read.subject.key === target.person &&
      read.subject.target_kind === target.target_kind &&
      read.subject.target_name === target.target_name;
    if (!ownPerson) await checkPersonSubject(env, read.subject).catch((err) => fail(stateWhere(attach, "subject"), err));
    for (const inj of attach.input_injections) {
      const where = stateWhere(attach, `input injection into ${inj.into}`);
      const record = read.record?.data ?? {};
      let value: JsonValue;
      try {
        value =
          inj.template_jq !== null
            ? await runInputProgram(env, resolveProgram(read.attachments, inj.template_jq), record, {})
            : ((await evalOne(env, must(inj.jq, "an injection's jq (it has jq or template_jq)"), { record, input }, where)) as JsonValue);
      } catch (err) {
        return fail(where, err);
      }
      Object.defineProperty(input, inj.into, { value, enumerable: true, writable: true, configurable: true });
    }
    out.push({ attach, subject: read.subject, record: read.record, attachments: read.attachments });
  }
  return { input, engaged: out };
}

/** The op batch and op id one update answers, computed from `record`. */
async function updateOps(env: Env, e: EngagedAttach, u: StateAttach["updates"][number], record: JsonObject, input: JsonObject, output: unknown) {
  const where = stateWhere(e.attach, "update");
  let opId: string | null = null;
  if (u.op_id) {
    const v = await evalOne(env, u.op_id, { output, input }, `${where} op_id`);
    if (v !== null && typeof v !== "string") throw new BindingError(`${where} op_id must answer a string or null`);
    opId = v === "" ? null : v;
  }
  try {
    if (u.template_jq !== null) {
      const programInput = u.adapter ? ((await evalOne(env, u.adapter, { output, input }, `${where} adapter`)) as JsonValue) : input;
      return { opId, ops: await runUpdateProgram(env, resolveProgram(e.attachments, u.template_jq), record, programInput) };
    }
    return { opId, ops: opsFrom(await evalOne(env, must(u.jq, "an update's jq (it has jq or template_jq)"), { record, output, input }, where), [], where) };
  } catch (err) {
    return fail(where, err);
  }
}

/** A bound state's updates still to apply (from update `from` on): what a pending save keeps. */
export interface PendingItem {
  state: string;
  subject: Subject;
  attach: StateAttach;
  from: number;
}

/** The held-subject key of (state, subject): a pending save holds it until it has applied. */
export function heldKey(state: string, subject: Subject): string {
  return JSON.stringify([state, subject.target_kind, subject.target_name, subject.kind, subject.key]);
}

/**
 * One engaged attach's updates from `from` on, written in order. A refusal (or a failing program)
 * throws BindingError. When the state's object cannot be reached the answer is the index of the
 * first update not applied, for a pending save; -1 when every update applied.
 */
export async function applyAttachUpdates(
  env: Env,
  e: EngagedAttach,
  from: number,
  input: JsonObject,
  output: unknown,
  origin: WriteOrigin,
  nowMs: number,
): Promise<number> {
  const stub = stateStoreStub(env, e.attach.state);
  let record = e.record;
  for (let j = from; j < e.attach.updates.length; j++) {
    const u = e.attach.updates[j];
    for (let attempt = 0; ; attempt++) {
      const { opId, ops } = await updateOps(env, e, u, record?.data ?? {}, input, output);
      let r: Awaited<ReturnType<typeof stub.write>>;
      try {
        r = await stub.write(e.subject, { kind: "ops", ops, op_id: opId, if_seq: record?.seq ?? 0 }, { ...origin, op_id: opId }, nowMs);
      } catch (err) {
        console.error("state binding: the state's object could not be reached; the save waits", err);
        return j;
      }
      if (r.ok) {
        record = r.record;
        break;
      }
      // Another write landed between the read and this one: recompute from the newer version.
      if (r.status === 409 && attempt < 2) {
        const again = await stub.read(e.subject, nowMs);
        if (again !== null && "ok" in again) throw new BindingError(`${stateWhere(e.attach, "update")}: ${again.error}`);
        record = again;
        continue;
      }
      throw new BindingError(`${stateWhere(e.attach, "update")}: ${r.error}`);
    }
  }
  return -1;
}

/**
 * Steps after dispatch: every engaged attach's updates, written in order. What cannot apply now
 * comes back for a pending save: an attach whose subject an older pending save still holds, one
 * whose object could not be reached, and every attach after it (the turn's own order is kept).
 */
export async function applyStateUpdates(
  env: Env,
  prepared: { input: JsonObject; engaged: EngagedAttach[] },
  output: unknown,
  origin: WriteOrigin,
  nowMs: number,
  held: ReadonlySet<string> = new Set(),
): Promise<PendingItem[]> {
  const { input } = prepared;
  const leftover: PendingItem[] = [];
  for (const e of prepared.engaged) {
    if (!(await engaged(env, e.attach, input))) continue;
    const item = { state: e.attach.state, subject: e.subject, attach: e.attach };
    if (leftover.length > 0 || held.has(heldKey(e.attach.state, e.subject))) {
      leftover.push({ ...item, from: 0 });
      continue;
    }
    const from = await applyAttachUpdates(env, e, 0, input, output, origin, nowMs);
    if (from >= 0) leftover.push({ ...item, from });
  }
  return leftover;
}
