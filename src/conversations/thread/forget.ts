/**
 * Forgetting a thread takes its interactions with it: the ones it waits on (read before the
 * records go) and every one listed for it.
 */
import { eraseThreadInteractions } from "../../interactions/erasure";
import type { ForgetResult } from "../model/thread-rpc";
import type { ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import { parkedIds } from "./parked";
import type { ThreadReads } from "./reads";
import type { WebVisitor } from "./web-visitor";

export async function forgetThread(
  deps: Pick<ThreadDeps, "storage" | "env">,
  parts: { identity: ThreadIdentity; reads: ThreadReads; web: WebVisitor },
): Promise<ForgetResult> {
  const threadId = parts.identity.get();
  const parked = parkedIds(deps.storage);
  const r = await parts.reads.forget();
  // A forgotten web visitor's session and transcript go with the records: the page is told and closed.
  if (r.ok) parts.web.end(true);
  if (r.ok && threadId) await eraseThreadInteractions(deps.env(), threadId, parked);
  return r;
}
