/**
 * Forgetting a thread takes every copy of it along (docs/security.md "Every copy of a
 * conversation"): its interactions (the ones it waits on, read before the records go, and every
 * one listed for it), and the web page's transcript entries of its records, wherever the visitor's
 * page reads them: here when this is the visitor's own thread, else in the visitor's thread on
 * the route (a linked person's records are shown there), whose session ends with them.
 */
import { z } from "zod";
import { eraseThreadInteractions } from "../../interactions/erasure";
import { threadStub } from "../model/thread-rpc";
import type { ForgetResult } from "../model/thread-rpc";
import type { ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import { parkedIds } from "./parked";
import type { ThreadReads } from "./reads";
import { deleteMeta, getMeta, setMeta, webRecordsByPlace } from "./store";
import { type WebVisitor, webHome } from "./web-visitor";

/** Forgets this thread (ThreadRpc.forget) and every copy of its records kept elsewhere. */
export async function forgetThread(
  deps: Pick<ThreadDeps, "storage" | "env">,
  parts: { identity: ThreadIdentity; reads: ThreadReads; web: WebVisitor },
): Promise<ForgetResult> {
  const threadId = parts.identity.get();
  const parked = parkedIds(deps.storage);
  // What an earlier forget could not reach yet (another object failed): reached first.
  const elsewhere = new Map<string, string[]>(Object.entries(pendingElsewhere(deps.storage)));
  const r = await parts.reads.forget(() => {
    for (const w of webRecordsByPlace(deps.storage)) {
      const home = webHome(w);
      if (home && home !== threadId) elsewhere.set(home, [...(elsewhere.get(home) ?? []), w.message_id]);
    }
    // Kept in the records' own step: a forget that fails after the records went still knows
    // where their copies are, and its retry reaches them.
    if (elsewhere.size) setMeta(deps.storage, PENDING, JSON.stringify(Object.fromEntries(elsewhere)));
  });
  if (!r.ok) return r;
  // A forgotten web visitor's session and transcript go with the records: the page is told and
  // closed, and the visitor's uploads are deleted from the bucket.
  parts.web.end(true);
  await parts.web.reap();
  // A linked person's records shown in their visitors' pages: those entries go, and each of those
  // sessions ends (its open pages showed what was just forgotten).
  for (const [home, ids] of elsewhere) await threadStub(deps.env(), home).webForget(ids);
  if (elsewhere.size) deleteMeta(deps.storage, PENDING);
  if (threadId) await eraseThreadInteractions(deps.env(), threadId, parked);
  return r;
}

/** The meta key of the page copies a forget still has to reach: visitor thread id → message ids. */
const PENDING = "web_forget_pending";

function pendingElsewhere(storage: DurableObjectStorage): Record<string, string[]> {
  const raw = getMeta(storage, PENDING);
  if (!raw) return {};
  const parsed = z.record(z.string(), z.array(z.string())).safeParse(JSON.parse(raw));
  return parsed.success ? parsed.data : {};
}
