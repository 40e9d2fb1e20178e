/**
 * The operator read doors (spec §4.5, decisions §9): thread listing, route-wide message search and
 * one thread's transcript. Listing and search walk the D1 `threads` index newest activity first;
 * records are read from each thread's object. Scans are bounded so a page costs a bounded amount
 * of work whatever the route's size; a page that spent its budget says `truncated: true`.
 */
import { z } from "zod";
import { type AnswerRecord, project } from "../model/record";
import { threadStub } from "../door/stubs";
import { PERSON_PREFIX, routePrefix } from "../../shared/thread-id";
import type { Env } from "../../platform/env";
import { HttpError } from "../../platform/http/errors";
import { type Page, type Window, toPage } from "../../platform/http/paging";
import { CountRow, type SqlFragment, all, batch, d1, first, rowsOf, sql } from "../../platform/persistence/d1";

/** Threads a filtered listing or a search examines at most. */
export const THREAD_SCAN_BUDGET = 500;
/** Records a search (route-wide) or a transcript `q` (one thread) examines at most. */
export const RECORD_SCAN_BUDGET = 1000;
/** Thread objects a search reads at once. */
const SEARCH_FANOUT = 8;

/** A `threads` listing row as the operator doors show it. */
const ThreadItem = z.object({
  thread_id: z.string(),
  client_address: z.string().nullable(),
  last_activity_at: z.string(),
  message_count: z.coerce.number(),
  last_status: z.string(),
  rated_down: z.coerce.number(),
});
export type ThreadItem = z.infer<typeof ThreadItem>;

const THREAD_COLS = sql`thread_id, client_address, last_activity_at, message_count, last_status, rated_down`;
const LiveThreadRow = z.object({ thread_id: z.string(), live: z.number() });
const MessageCountRow = z.object({ message_count: z.number() });
const NEWEST_FIRST = sql`ORDER BY last_activity_at DESC, thread_id DESC`;

/**
 * A page of the route's threads. Unfiltered: an indexed page and count, never truncated. Filtered
 * (`status` matches `last_status`; `address` is a case-sensitive substring of the part after
 * `bridge:{route}:`, never matching a person thread): a post-scan of the newest 500 threads.
 */
export async function listThreads(
  db: D1Database,
  routeName: string,
  f: { status?: string; address?: string; inbox_status?: string; assignee?: string; label?: string; waiting?: "true" | "false"; rated?: "down" },
  w: Window,
): Promise<Page<ThreadItem>> {
  // The inbox's filters are indexed columns of the listing (docs/inbox.md): they narrow the SQL itself.
  const inbox = inboxFilter(f);
  if (f.status === undefined && f.address === undefined) {
    const rows = d1(db)`SELECT ${THREAD_COLS} FROM threads WHERE route_name = ${routeName} ${inbox} ${NEWEST_FIRST} LIMIT ${w.pageSize} OFFSET ${w.offset}`;
    const count = d1(db)`SELECT COUNT(*) AS n FROM threads WHERE route_name = ${routeName} ${inbox}`;
    const [page, counted] = await batch(db, [rows, count]);
    return toPage(rowsOf(ThreadItem, page.results, rows.text).map(item), rowsOf(CountRow, counted.results, count.text)[0]?.n ?? 0, w);
  }
  const results = await all(
    ThreadItem,
    d1(db)`SELECT ${THREAD_COLS} FROM threads WHERE route_name = ${routeName} ${inbox} ${NEWEST_FIRST} LIMIT ${THREAD_SCAN_BUDGET + 1}`,
  );
  const prefix = routePrefix(routeName);
  const matches = results.slice(0, THREAD_SCAN_BUDGET).filter((t) => {
    if (f.status !== undefined && t.last_status !== f.status) return false;
    if (f.address !== undefined) {
      if (t.thread_id.startsWith(PERSON_PREFIX) || !t.thread_id.startsWith(prefix)) return false;
      if (!t.thread_id.slice(prefix.length).includes(f.address)) return false;
    }
    return true;
  });
  return toPage(matches.slice(w.offset, w.offset + w.pageSize).map(item), matches.length, w, results.length > THREAD_SCAN_BUDGET);
}

function inboxFilter(f: { inbox_status?: string; assignee?: string; label?: string; waiting?: "true" | "false"; rated?: "down" }): SqlFragment {
  let out = sql``;
  // Rows listed before the inbox existed have no status: they read as pending.
  if (f.inbox_status !== undefined) out = sql`${out} AND COALESCE(inbox_status, 'pending') = ${f.inbox_status}`;
  if (f.assignee !== undefined) out = sql`${out} AND assignee = ${f.assignee}`;
  if (f.label !== undefined) out = sql`${out} AND EXISTS (SELECT 1 FROM json_each(threads.labels) WHERE json_each.value = ${f.label})`;
  if (f.waiting === "true") out = sql`${out} AND waiting_since IS NOT NULL`;
  if (f.waiting === "false") out = sql`${out} AND waiting_since IS NULL`;
  if (f.rated === "down") out = sql`${out} AND rated_down > 0`;
  return out;
}

function item(r: ThreadItem): ThreadItem {
  return {
    thread_id: r.thread_id,
    client_address: r.client_address,
    last_activity_at: r.last_activity_at,
    message_count: Number(r.message_count),
    last_status: r.last_status,
    rated_down: Number(r.rated_down),
  };
}

/**
 * Every record of the route whose inbound text or answer contains `q` (case-insensitive): newest-
 * active thread first, newest record first within a thread, within budgets of 500 threads and
 * 1000 records. Thread objects are read a few at a time; each is asked to scan at most what is
 * left of the record budget and reports match positions, so a batch cuts exactly at the budget.
 * The listing row's `live_until` stands in for a thread's object where it says no live record is left.
 */
export async function searchRoute(env: Env, routeName: string, q: string, w: Window): Promise<Page<Record<string, unknown>>> {
  // Each thread comes with whether its listing row says a record still lives: a thread
  // whose records all expired counts against the thread budget but costs no object read.
  const results = await all(
    LiveThreadRow,
    d1(env.DB)`SELECT thread_id, (live_until IS NULL OR live_until > ${Date.now()}) AS live
      FROM threads WHERE route_name = ${routeName} ${NEWEST_FIRST} LIMIT ${THREAD_SCAN_BUDGET + 1}`,
  );
  const threads = results
    .slice(0, THREAD_SCAN_BUDGET)
    .filter((r) => r.live)
    .map((r) => r.thread_id);
  let truncated = results.length > THREAD_SCAN_BUDGET;
  let remaining = RECORD_SCAN_BUDGET;
  const found: AnswerRecord[] = [];
  for (let i = 0; i < threads.length; i += SEARCH_FANOUT) {
    if (remaining === 0) {
      truncated = true; // threads left unread
      break;
    }
    const budget = remaining;
    const scans = await Promise.all(threads.slice(i, i + SEARCH_FANOUT).map((t) => threadStub(env, t).search({ q, budget })));
    for (const scan of scans) {
      const take = Math.min(scan.scanned, remaining);
      if (scan.scanned > take || scan.more) truncated = true;
      for (const m of scan.matches) if (m.pos < take) found.push(m.record);
      remaining -= take;
    }
  }
  return toPage(
    found.slice(w.offset, w.offset + w.pageSize).map((r) => project(r, true)),
    found.length,
    w,
    truncated,
  );
}

export type TranscriptAnswer = Page<Record<string, unknown>> & { order: "asc" | "desc" };

/**
 * One thread's records a page at a time (spec §4.5), read from the thread's object, so a thread
 * shows at once, before the listing's batched write reaches D1. Without `q`, a thread
 * with no live record is 404 unless the listing holds it: one whose records all expired reads as
 * an empty page carrying the listed total (next_page null: there is nothing to page to) until the
 * thread's alarm drops its listing row. With `q`, total is the matches found and an unknown or
 * unmatched thread reads as an empty page.
 */
export async function readTranscript(
  env: Env,
  routeName: string,
  threadId: string,
  opts: { order: "asc" | "desc"; q?: string; admin: boolean },
  w: Window,
): Promise<TranscriptAnswer> {
  const shape = (p: Page<Record<string, unknown>>): TranscriptAnswer => ({
    items: p.items,
    total: p.total,
    page: p.page,
    page_size: p.page_size,
    next_page: p.next_page,
    order: opts.order,
    truncated: p.truncated,
  });
  const thread = threadStub(env, threadId);
  if (opts.q) {
    const page = await thread.transcript({ order: opts.order, offset: w.offset, limit: w.pageSize, q: opts.q, scanBudget: RECORD_SCAN_BUDGET });
    return shape(
      toPage(
        page.items.map((r) => project(r, opts.admin)),
        page.total,
        w,
        page.truncated,
      ),
    );
  }
  const page = await thread.transcript({ order: opts.order, offset: w.offset, limit: w.pageSize });
  if (page.total > 0)
    return shape(
      toPage(
        page.items.map((r) => project(r, opts.admin)),
        page.total,
        w,
      ),
    );
  const listed = await first(MessageCountRow, d1(env.DB)`SELECT message_count FROM threads WHERE route_name = ${routeName} AND thread_id = ${threadId}`);
  if (!listed) throw new HttpError(404, "thread not found");
  return shape({ ...toPage([], Number(listed.message_count), w), next_page: null });
}
