/** How a caller narrows the runs it reads (issue 16), and the page both listing doors answer. */
import { badRequest } from "../http/errors";
import { type Page, toPage, toWindow } from "../http/paging";
import { type RunFilter, type RunFilterQuery, type RunView, listRuns } from "./query";

/** The caller as the runs doors see it. */
export interface RunsCaller {
  restricted: boolean;
  admin: boolean;
  key: { user_id: string };
}

/**
 * The filter a caller's query runs as: a restricted caller (an owned key) is narrowed to the runs
 * whose principal is its own key, whatever it asked; `from` after `to` is a 400.
 */
export function callerFilter(q: RunFilterQuery, caller: RunsCaller | null): RunFilter {
  if (q.from !== undefined && q.to !== undefined && q.from > q.to) throw badRequest("invalid query: from: must not be after to");
  // No principal (a door pinned public) reads as restricted to nothing it could own.
  if (!caller) return { ...q, principal: "(public)" };
  return caller.restricted ? { ...q, principal: caller.key.user_id } : q;
}

/** One page of the runs `caller` may read: `GET /api/runs` and `GET /api/observability/runs` alike. */
export async function runsPage(db: D1Database, q: RunFilterQuery & { page?: number; pageSize?: number }, caller: RunsCaller | null): Promise<Page<RunView>> {
  const filter = callerFilter(q, caller);
  const w = toWindow(q);
  const { items, total } = await listRuns(db, filter, w.offset, w.pageSize);
  return toPage(items, total, w);
}
