/** How a caller narrows the runs it reads, and the page both listing doors answer. */
import { holderOf, sinceMs } from "../../access-control/identity";
import { badRequest } from "../../platform/http/errors";
import { type Page, toPage, toWindow } from "../../platform/http/paging";
import { type RunFilter, type RunFilterQuery, type RunView, listRuns } from "./query";

/** The caller as the runs doors see it. */
export interface RunsCaller {
  restricted: boolean;
  admin: boolean;
  key: { user_id: string; created_at: string };
}

/**
 * The filter a caller's query runs as: a restricted caller (an owned key) is narrowed to the runs
 * whose principal is its own key, started since its key's lineage began (src/access-control/identity.ts:
 * an earlier holder's runs under the same user_id are not its own), whatever it asked; `from`
 * after `to` is a 400.
 */
export function callerFilter(q: RunFilterQuery, caller: RunsCaller | null): RunFilter {
  if (q.from !== undefined && q.to !== undefined && q.from > q.to) throw badRequest("invalid query: from: must not be after to");
  // No principal (a door pinned public) reads as restricted to nothing it could own.
  if (!caller) return { ...q, principal: "(public)" };
  if (!caller.restricted) return q;
  const since = sinceMs(holderOf(caller.key));
  return { ...q, principal: caller.key.user_id, principal_since: Number.isFinite(since) ? since : Number.MAX_SAFE_INTEGER };
}

/** One page of the runs `caller` may read: `GET /api/runs` and `GET /api/observability/runs` alike. */
export async function runsPage(db: D1Database, q: RunFilterQuery & { page?: number; pageSize?: number }, caller: RunsCaller | null): Promise<Page<RunView>> {
  const filter = callerFilter(q, caller);
  const w = toWindow(q);
  const { items, total } = await listRuns(db, filter, w.offset, w.pageSize);
  return toPage(items, total, w);
}
