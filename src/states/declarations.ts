/**
 * The declaration doors' logic (spec §2.10, §4.10; platform-facts A3): resolve the
 * schema, check it, hand the declaration to the state's object (the truth, which also applies the
 * additive-only rule against its records), then mirror the view into the D1 listing.
 */
import { type StateStats, type StateView, stateStoreStub } from "./rpc";
import type { Env } from "../platform/env";
import { HttpError, badRequest } from "../platform/http/errors";
import type { JsonObject } from "../platform/http/bounded-json";
import { renderTemplatedText, type TemplatedText } from "../templates/templated-text";
import { type StateDeclarationBody, canonicalJson, checkBaseSchema, looksLikeTemplatedText } from "./declaration";
import { savesOnState } from "./pending-saves";
import { parseStored } from "../platform/persistence/stored-json";
import { CountRow, all, batch, d1, rowsOf, run } from "../platform/persistence/d1";
import { z } from "zod";
import { refusal, stateNotFound } from "./refusals";
import { StateView as StateViewSchema } from "./views";

// The body's own reading (src/states/declaration.ts), so the two can never disagree.
const ViewRow = z.object({ view: z.string() });
const NameRow = z.object({ name: z.string() });

const isTemplatedText = (v: unknown): v is TemplatedText => looksLikeTemplatedText(v);

/** The schema as an object: a raw one as is; a TemplatedText rendered (mustache) and parsed. */
export async function resolveSchema(db: D1Database, schema: unknown): Promise<JsonObject> {
  if (!isTemplatedText(schema)) return schema as JsonObject;
  let text: string;
  try {
    text = await renderTemplatedText(db, schema);
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw badRequest("invalid body: schema: its TemplatedText could not be rendered");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest("invalid body: schema: its TemplatedText does not render to JSON");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw badRequest("invalid body: schema: must be a JSON object");
  return parsed as JsonObject;
}

export async function declareState(env: Env, name: string, body: StateDeclarationBody, nowMs: number): Promise<StateView> {
  const resolved = await resolveSchema(env.DB, body.schema);
  const problem = checkBaseSchema(resolved);
  if (problem) throw badRequest(`invalid body: schema: ${problem}`);
  await refuseIfHeld(env, name, body);
  const r = await stateStoreStub(env, name).declare(
    name,
    {
      description: body.description,
      schema: body.schema as JsonObject,
      resolved_schema: resolved,
      subject_kinds: body.subject_kinds,
      default_subject_kind: body.default_subject_kind,
      retention_days: body.retention_days ?? null,
    },
    nowMs,
  );
  if (!r.ok) throw refusal(r);
  await run(
    d1(
      env.DB,
    )`INSERT INTO states (name, view, updated_at) VALUES (${name}, ${JSON.stringify(r.view)}, ${r.view.updated_at}) ON CONFLICT (name) DO UPDATE SET view = excluded.view, updated_at = excluded.updated_at`,
  );
  return r.view;
}

/**
 * Pending saves waiting on the state hold its shape (platform-facts A3, "held"): while any waits,
 * a re-declare may change the description and retention but not the schema or the subject kinds,
 * so no waiting save can become invalid under it (409 naming the held save ids). This is
 * stricter than checking each save against the new schema, and never wrong. A failed save does
 * not hold it: changing the declaration is how an operator makes a failed save fit again.
 */
async function refuseIfHeld(env: Env, name: string, body: StateDeclarationBody): Promise<void> {
  const held = await savesOnState(env.DB, name, true);
  if (held.length === 0) return;
  const current = await stateStoreStub(env, name).view();
  if (!current) return;
  const same =
    canonicalJson(current.schema) === canonicalJson(body.schema) &&
    canonicalJson(current.subject_kinds) === canonicalJson(body.subject_kinds) &&
    current.default_subject_kind === body.default_subject_kind;
  if (!same)
    throw new HttpError(
      409,
      "pending saves on this state are outstanding; its schema and subject kinds cannot change until they apply or are discarded",
      undefined,
      { held },
    );
}

export async function readState(env: Env, name: string): Promise<StateView> {
  const view = await stateStoreStub(env, name).view();
  if (!view) throw stateNotFound();
  return view;
}

/** The listing, from D1, in name order. */
export async function listStates(env: Env, offset: number, limit: number): Promise<{ items: StateView[]; total: number }> {
  const q = d1(env.DB);
  const stmts = [q`SELECT view FROM states ORDER BY name LIMIT ${limit} OFFSET ${offset}`, q`SELECT COUNT(*) AS n FROM states`];
  const [rows, count] = await batch(env.DB, stmts);
  const views = rowsOf(ViewRow, rows?.results ?? [], stmts[0]?.text ?? "");
  const [n] = rowsOf(CountRow, count?.results ?? [], stmts[1]?.text ?? "");
  return { items: views.map((r) => parseStored(StateViewSchema, r.view, "states.view")), total: n?.n ?? 0 };
}

/** Every declared state's name (erasure and retention walk them). */
export async function stateNames(db: D1Database): Promise<string[]> {
  const rows = await all(NameRow, d1(db)`SELECT name FROM states ORDER BY name`);
  return rows.map((r) => r.name);
}

export async function deleteState(env: Env, name: string): Promise<{ name: string; deleted: true; records: number }> {
  const stub = stateStoreStub(env, name);
  if (!(await stub.view())) throw stateNotFound();
  const { records } = await stub.drop();
  await run(d1(env.DB)`DELETE FROM states WHERE name = ${name}`);
  return { name, deleted: true, records };
}

export async function stateStats(env: Env, name: string): Promise<StateStats> {
  const stats = await stateStoreStub(env, name).stats(Date.now());
  if (!stats) throw stateNotFound();
  return stats;
}

/**
 * The retention sweep: every declared state's object drops its records older than the
 * state's `retention_days` (by last write). Expired records already read as absent; this reclaims
 * them. Run by `POST /api/state-retention/prune` and by the cron pass (src/index.ts).
 */
export async function pruneStates(env: Env, nowMs: number): Promise<{ states: number; expired: number; by_state: Record<string, number> }> {
  const names = await stateNames(env.DB);
  const byState: Record<string, number> = {};
  let expired = 0;
  for (const name of names) {
    const r = await stateStoreStub(env, name).prune(nowMs);
    if (r.expired > 0) byState[name] = r.expired;
    expired += r.expired;
  }
  return { states: names.length, expired, by_state: byState };
}
