/**
 * The record doors' logic (platform-facts B5): the subject from the path, the `person`
 * kind checked against the persons of the same target, then one call to the state's object. The
 * object answers refusals (unknown state 404, kind not declared 400, schema or op violations 400,
 * an effective schema that no longer composes 409) that become the door's status.
 */
import { type RecordChange, type StateRecord, type Subject, type WriteOrigin, stateStoreStub } from "./rpc";
import type { Env } from "../platform/env";
import { HttpError } from "../platform/http/errors";
import type { JsonObject } from "../platform/http/bounded-json";
import { directoryOfPerson } from "../persons/person-lookup";
import { refusal } from "./refusals";

/**
 * A `person` subject names a person of the same target (platform-facts B5): its key is the
 * person id, and that person must belong to the subject's target.
 */
export async function checkPersonSubject(env: Env, s: Subject): Promise<void> {
  if (s.kind !== "person") return;
  const directory = await directoryOfPerson(env, s.key);
  const person = directory ? await directory.get(s.key) : null;
  if (!person || person.target_kind !== s.target_kind || person.target_name !== s.target_name) throw new HttpError(404, "person not found for this target");
}

/** An operator's write through the API: the audit trail's origin. */
export function apiOrigin(actor: string, opId: string | null = null, meta: JsonObject | null = null): WriteOrigin {
  return { door: "api", actor, consumer: null, meta, run_id: null, op_id: opId, turn_id: null, inbound_id: null };
}

export async function readRecord(env: Env, state: string, s: Subject): Promise<StateRecord | null> {
  await checkPersonSubject(env, s);
  const r = await stateStoreStub(env, state).read(s, Date.now());
  if (r !== null && "ok" in r) throw refusal(r);
  return r;
}

export async function writeRecord(env: Env, state: string, s: Subject, change: RecordChange, origin: WriteOrigin) {
  await checkPersonSubject(env, s);
  const r = await stateStoreStub(env, state).write(s, change, origin, Date.now());
  if (!r.ok) throw refusal(r);
  return r;
}
