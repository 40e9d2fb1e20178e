/**
 * State records (spec §4.11 "States"; platform-facts B5): read, replace, merge and erase
 * one subject's record, apply an op batch, fold one subject into another, the write audit trail,
 * search by JSON containment and the subjects listing. Tagged `states` (search is a POST, so the
 * write grant); 501 `states-not-configured` without a store.
 *
 * Each path segment is percent-encoded; a key may hold `/` (thread ids do) as `%2F` and still
 * routes as one segment, even when its tail looks like a sub-action (`…%2Fwrites`).
 */
import { Hono } from "hono";
import { z } from "zod";
import { stateStoreStub } from "../rpc";
import type { AppEnv } from "../../platform/http/app-env";
import { boundedJsonObject, jsonObjectSchema, MAX_JSON_BYTES } from "../../platform/http/bounded-json";
import { badRequest } from "../../platform/http/errors";
import { intactIdentifier } from "../../platform/http/identifiers";
import { addRoute } from "../../platform/http/route";
import { StateName, SubjectKind } from "../declaration";
import { STATES_DOOR, refusal, stateNotFound } from "../refusals";
import { DeltaBatch } from "../ops";
import { heldInState } from "../pending-saves";
import { apiOrigin, checkPersonSubject, readRecord, writeRecord } from "../records";
import { FoldResult, StateRecord, Subject, WriteEntry, cursorPage } from "../views";
import { TargetKind } from "../../shared/kinds";

export const stateRecordsRouter = new Hono<AppEnv>();

export const RECORD = "/api/states/{name}/records/{target_kind}/{target_name}/{kind}/{key}";
const MAX_RECORD_BYTES = 256 * 1024;

export const recordParams = z.object({
  name: StateName,
  target_kind: TargetKind,
  target_name: intactIdentifier(z.string().trim().min(1, { message: "must not be blank" }).max(128)),
  kind: SubjectKind,
  key: intactIdentifier(z.string().trim().min(1, { message: "must not be blank" }).max(512)),
});
type RecordParams = z.infer<typeof recordParams>;

export const subjectOf = (p: RecordParams): Subject => ({ target_kind: p.target_kind, target_name: p.target_name, kind: p.kind, key: p.key });
const recordBody = boundedJsonObject(MAX_RECORD_BYTES);
const cursorQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().min(1).max(2048).optional(),
});

addRoute(
  stateRecordsRouter,
  {
    method: "get",
    path: RECORD,
    summary: "Read a subject's record (null when it has none)",
    ...STATES_DOOR,
    params: recordParams,
    response: StateRecord.nullable(),
    errors: [404],
  },
  async (c, { params }) => readRecord(c.env, params.name, subjectOf(params)),
);

// PUT replaces the document, PATCH merges top-level fields into it: one door shape, two changes.
for (const door of [
  { method: "put", kind: "replace", summary: "Replace a subject's record (validated against the effective schema)" },
  { method: "patch", kind: "merge", summary: "Merge top-level fields into a subject's record" },
] as const) {
  addRoute(
    stateRecordsRouter,
    {
      method: door.method,
      path: RECORD,
      summary: door.summary,
      ...STATES_DOOR,
      params: recordParams,
      body: recordBody,
      response: StateRecord,
      errors: [404, 409],
    },
    async (c, { params, body, principal }) =>
      (await writeRecord(c.env, params.name, subjectOf(params), { kind: door.kind, data: body }, apiOrigin(principal.key.user_id))).record,
  );
}

addRoute(
  stateRecordsRouter,
  {
    method: "delete",
    path: RECORD,
    summary: "Erase a subject's record, its audit trail and what was folded into it",
    ...STATES_DOOR,
    params: recordParams,
    response: z.object({ erased: z.boolean() }),
    errors: [404],
  },
  async (c, { params }) => {
    const r = await stateStoreStub(c.env, params.name).erase(subjectOf(params));
    if ("ok" in r) throw refusal(r);
    return r;
  },
);

addRoute(
  stateRecordsRouter,
  {
    method: "post",
    path: `${RECORD}/deltas`,
    summary: "Apply an op batch to a subject's record",
    description:
      "Ops: set, remove, set_by_key, merge_by_key, remove_by_key, unset_by_key, set_by_key_each (docs/states.md). At most 1000 ops, 128 path segments, 200 keyed items. A replayed op_id or an empty batch answers applied: false and changes nothing. A whole-path set or remove over a composing path is 400.",
    ...STATES_DOOR,
    params: recordParams,
    body: DeltaBatch,
    response: z.object({ applied: z.boolean(), data: jsonObjectSchema, seq: z.number().int(), skipped: z.array(z.number().int()) }),
    errors: [404, 409],
  },
  async (c, { params, body, principal }) => {
    const opId = body.op_id ?? null;
    const r = await writeRecord(c.env, params.name, subjectOf(params), { kind: "ops", ops: body.ops, op_id: opId }, apiOrigin(principal.key.user_id, opId));
    return { applied: r.applied, data: r.record.data, seq: r.record.seq, skipped: r.skipped };
  },
);

const foldBody = z
  .object({
    into: z.object({ target_kind: TargetKind, target_name: recordParams.shape.target_name, kind: SubjectKind, key: recordParams.shape.key }).strict(),
    mode: z.enum(["switch", "merge"]),
  })
  .strict();

addRoute(
  stateRecordsRouter,
  {
    method: "post",
    path: `${RECORD}/fold`,
    summary: "Fold this subject into another: it reads and writes the other's record from now on",
    description:
      "mode switch: this subject's own record is dropped and it follows `into`. mode merge: `into` gains the top-level fields it lacks from this subject's record, then this subject follows it. Subjects already folded into this one follow too (flattened). Folding a subject into itself (or where it already leads) answers already: true.",
    ...STATES_DOOR,
    params: recordParams,
    body: foldBody,
    response: FoldResult,
    errors: [404, 409],
  },
  async (c, { params, body, principal }) => {
    const from = subjectOf(params);
    const into: Subject = body.into;
    if (into.target_kind !== from.target_kind || into.target_name !== from.target_name)
      throw badRequest("invalid body: into: must be a subject of the same target");
    await checkPersonSubject(c.env, from);
    await checkPersonSubject(c.env, into);
    const r = await stateStoreStub(c.env, params.name).fold(from, into, body.mode, apiOrigin(principal.key.user_id), Date.now());
    if (!r.ok) throw refusal(r);
    const { ok: _ok, ...result } = r;
    return result;
  },
);

addRoute(
  stateRecordsRouter,
  {
    method: "get",
    path: `${RECORD}/writes`,
    summary: "A subject's write audit trail, newest first",
    ...STATES_DOOR,
    params: recordParams,
    query: cursorQuery,
    response: cursorPage(WriteEntry),
    errors: [404],
  },
  async (c, { params, query }) => {
    const r = await stateStoreStub(c.env, params.name).writes(subjectOf(params), query.limit, query.cursor ?? null);
    if ("ok" in r) throw refusal(r);
    return r;
  },
);

const searchBody = z
  .object({
    filters: boundedJsonObject(MAX_JSON_BYTES),
    limit: z.number().int().min(1).max(200).default(50),
    cursor: z.string().min(1).max(2048).nullable().optional(),
  })
  .strict();

addRoute(
  stateRecordsRouter,
  {
    method: "post",
    path: "/api/states/{name}/records/search",
    summary: "Find subjects whose record contains `filters` (JSON containment)",
    description:
      "An object contains another when every key of the other is present with a contained value; an array, when each element of the other is contained in one of its elements; scalars, when equal. Paged with a cursor; at most 5000 records are read per request (a page may come back short with a cursor).",
    ...STATES_DOOR,
    params: z.object({ name: StateName }),
    body: searchBody,
    response: z.object({
      matches: z.array(z.object({ subject: Subject, updated_at: z.number().int() })),
      next_cursor: z.string().nullable(),
      held: z.array(Subject),
    }),
    errors: [404],
  },
  async (c, { params, body }) => {
    const stub = stateStoreStub(c.env, params.name);
    if (!(await stub.view())) throw stateNotFound();
    const page = await stub.search(body.filters, body.limit, body.cursor ?? null, Date.now());
    return { matches: page.items, next_cursor: page.next_cursor, held: await heldInState(c.env.DB, params.name) };
  },
);

addRoute(
  stateRecordsRouter,
  {
    method: "get",
    path: "/api/states/{name}/subjects",
    summary: "Subjects that have a record, in key order",
    ...STATES_DOOR,
    params: z.object({ name: StateName }),
    query: cursorQuery.extend({ kind: SubjectKind.optional() }),
    response: z.object({ subjects: z.array(Subject), next_cursor: z.string().nullable(), held: z.array(Subject) }),
    errors: [404],
  },
  async (c, { params, query }) => {
    const stub = stateStoreStub(c.env, params.name);
    if (!(await stub.view())) throw stateNotFound();
    const page = await stub.subjects(query.kind ?? null, query.limit, query.cursor ?? null, Date.now());
    return { subjects: page.items, next_cursor: page.next_cursor, held: await heldInState(c.env.DB, params.name) };
  },
);
