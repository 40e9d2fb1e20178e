/** Thread forget and control mode (spec §3.2, §4.6, §4.7; decisions §10). */
import { z } from "zod";
import { all, d1 } from "../../platform/persistence/d1";
import { dropThreadListing } from "../../shards/listing-table";
import { allShards } from "../../shards/rpc";
import { personDefaultMode } from "../model/mode";
import type { Mode } from "../../shared/kinds";
import { manualRoutesOfTarget } from "../store";
import type { Route } from "../model/route";
import type { PersonView } from "../../persons/rpc";
import { threadStub } from "../door/stubs";
import { personThreadId } from "../../shared/thread-id";
import { directoryOfPerson } from "../../persons/person-lookup";
import { channelThreadId } from "../../shared/thread-id";
import { stateStoreStub } from "../../states/rpc";
import { stateNames } from "../../states/declarations";
import type { Env } from "../../platform/env";
import { conflict } from "../../platform/http/errors";
import type { Settings } from "../../platform/settings/settings";
import { createTargetContext } from "../../targets/context";
import { dropThreadRuns, dropUserRuns } from "../../shards/runs-table";
import { eraseNotificationsTo } from "../../notifications/sink";

/**
 * Forgets a thread outright: its records with their run traces, unpushed index notes, mode override
 * and agent checkpoint in the thread object, then its ledger entries and buffered rows in every
 * IndexShard (message directory, dedupe keys, outbound ids, listing and run rows) and its listing
 * and run rows in D1.
 * A turn queued or running refuses with 409 and removes nothing.
 */
export async function forgetThread(env: Env, settings: Settings, routeName: string, threadId: string) {
  const removed = await forgetEverywhere(env, settings, threadId);
  return { removed, route_name: routeName, thread_id: threadId };
}

/** Forgets `threadId` wherever it is held (object, checkpoint, ledgers, listing); answers the records removed. 409 while a turn is in flight. */
async function forgetEverywhere(env: Env, settings: Settings, threadId: string): Promise<number> {
  const r = await threadStub(env, threadId).forget();
  if (!r.ok) throw conflict("a turn is in flight on this thread; retry once it drains");
  // The thread object already dropped a kv checkpoint (it lives in its storage); other providers
  // keep memory elsewhere and are told here, regardless of whether any record was left.
  if (settings.checkpoint.provider !== "kv") await createTargetContext(env, settings).checkpoints.delete(threadId);
  // Every shard drops the thread's ledger entries (directory, dedupe claims, outbound ids) and what
  // it buffered for the listing; only then do the listing rows go, so no flush brings them back.
  await Promise.all(allShards(env).map((shard) => shard.forgetThread(threadId)));
  await dropThreadListing(env.DB, threadId);
  // The thread's run summaries and load row: the traces went with the records.
  await dropThreadRuns(env.DB, threadId);
  // Erasure reaches states: every record whose subject is this thread, in every state.
  await eraseStateSubjects(env, settings, "thread", threadId);
  return r.removed;
}

/**
 * Removes, from every declared state, the records whose subject is (`kind`, `key`), for
 * thread forget and person erase. The states listing names the states; each one's object drops
 * the records, their audit trail and any fold aliases of that subject.
 */
async function eraseStateSubjects(env: Env, settings: Settings, kind: "thread" | "person", key: string): Promise<number> {
  if (!settings.states.storeUrl) return 0;
  const names = await stateNames(env.DB);
  const removed = await Promise.all(names.map((n) => stateStoreStub(env, n).eraseSubjectKey(kind, key)));
  return removed.reduce((sum, r) => sum + r.removed, 0);
}

/**
 * Erases a linked person (spec §4.6): each of its addresses' own threads on the routes it came in
 * on, and its aggregated thread, everywhere (records, checkpoint, ledger entries, listing rows on
 * every route, the web page's copies), every run trace attributed to the person (issue
 * 16: the person's turns on other threads and runs outside the bridge, wherever their traces are
 * kept), then, last, the person row with its address rows and open codes in one transaction of
 * its directory. Idempotent: an unknown or already erased
 * person answers `erased: false`, its aggregated thread forgotten regardless. 409 while a turn is
 * in flight on the person thread.
 */
export async function erasePerson(env: Env, settings: Settings, personId: string) {
  const directory = await directoryOfPerson(env, personId);
  // Each address's own thread on each route it came in on holds what it said before it was
  // linked (and, for a web address, the visitor's session and page transcript): forgotten like
  // the person's thread, so an open page is told and closed.
  const person = directory ? await directory.get(personId) : null;
  for (const a of person?.addresses ?? []) for (const route of a.routes) await forgetEverywhere(env, settings, channelThreadId(route, a.address));
  const removed = await forgetEverywhere(env, settings, personThreadId(personId));
  await eraseStateSubjects(env, settings, "person", personId);
  await eraseUserRuns(env, personId);
  // Notifications sent to the person's addresses, in the feeds that recorded them.
  await eraseNotificationsTo(
    env,
    (person?.addresses ?? []).map((a) => a.address),
  );
  const erased = directory ? (await directory.erase(personId)) !== null : false;
  return { person_id: personId, removed, erased };
}

/**
 * Removes the run traces attributed to `userId` (person erase): a turn's trace lives in its
 * thread object, found through the summary rows; other runs' in the shards, which also drop the
 * rows they buffered. The summary rows go last, so a retry finds what a failed call left.
 */
const TurnTraceRow = z.object({ trace_id: z.string(), thread_id: z.string().nullable() });

async function eraseUserRuns(env: Env, userId: string): Promise<void> {
  const turns = await all(TurnTraceRow, d1(env.DB)`SELECT trace_id, thread_id FROM runs WHERE user_id = ${userId} AND home = 'thread'`);
  const byThread = new Map<string, string[]>();
  for (const t of turns) if (t.thread_id) byThread.set(t.thread_id, [...(byThread.get(t.thread_id) ?? []), t.trace_id]);
  for (const [threadId, ids] of byThread) await threadStub(env, threadId).dropRunTraces(ids);
  await Promise.all(allShards(env).map((shard) => shard.eraseUserRuns(userId)));
  await dropUserRuns(env.DB, userId);
}

export interface ModeAnswer {
  mode: Mode;
  source: "thread" | "route";
}

/** A thread a mode door names, as the thread guard passed it: its person when it is a person thread. */
export interface ModeThread {
  thread_id: string;
  person: PersonView | null;
}

/**
 * The mode in force: the thread's live override (held by its object), else the default: the route's
 * `initial_mode`, or on a person thread manual when any route the person spans is manual (spec
 * §3.2; a deleted route imposes nothing). A person thread's override is person-wide, so it reads
 * the same from every route the person spans.
 */
export async function modeInForce(env: Env, route: Route, thread: ModeThread): Promise<ModeAnswer> {
  const stub = threadStub(env, thread.thread_id);
  if (!thread.person) return stub.getMode({ created_at: route.created_at }, route.initial_mode);
  const { person } = thread;
  const manual = await manualRoutesOfTarget(env.DB, person.target_kind, person.target_name);
  return stub.getMode(
    { created_at: null },
    personDefaultMode(
      person.addresses.flatMap((a) => a.routes),
      manual,
    ),
  );
}

/** Sets the thread's override for `answer_retention_ttl_seconds` (refreshed by later activity); person-wide on a person thread. */
export async function setThreadMode(env: Env, route: Route, thread: ModeThread, mode: Mode, by: string | null) {
  await threadStub(env, thread.thread_id).setMode(thread.thread_id, { created_at: thread.person ? null : route.created_at }, mode, {
    route_name: route.route_name,
    by,
  });
  return { route_name: route.route_name, thread_id: thread.thread_id, mode, source: "thread" as const };
}
