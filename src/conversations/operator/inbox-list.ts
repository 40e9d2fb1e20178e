/**
 * The cross-route inbox (`GET /api/inbox/threads`, docs/inbox.md): every route's threads from the
 * D1 listing, which carries each thread's inbox state (pushed from the thread object like the rest
 * of the row), in one of the views a support team works from, with filters.
 *
 * A key whose condition reads `.thread` (a "mine only" key) sees only the threads its condition
 * lets through: the page is then a post-scan of at most THREAD_SCAN_BUDGET rows, like a filtered
 * route listing, and says `truncated` when there were more.
 */
import { z } from "zod";
import { type Principal, principalConditionsAllow, principalReadsThread } from "../../access-control/principal";
import type { ConditionThread } from "../../access-control/condition";
import { identifierSchema } from "../../platform/http/identifiers";
import { type Page, type Window, pageSchema, pagingQuery, toPage } from "../../platform/http/paging";
import { CountRow, type SqlFragment, batch, d1, rowsOf, sql } from "../../platform/persistence/d1";
import { routeNameSchema } from "../model/schemas";
import { INBOX_STATUSES, InboxStatus, Label } from "../model/inbox";
import { THREAD_SCAN_BUDGET } from "./reads";

export const INBOX_VIEWS = ["waiting", "mine", "unassigned", "all", "resolved", "rated_down"] as const;

export const inboxListQuery = pagingQuery.extend({
  /**
   * `waiting`: customers waiting for a human, longest wait first; `mine`: held by the caller and not
   * resolved; `unassigned`: open and held by nobody; `all` (the default): everything not resolved;
   * `resolved`; `rated_down`: the review queue, threads with an answer their customer rated down
   * (whatever their status), newest activity first.
   */
  view: z.enum(INBOX_VIEWS).default("all"),
  route: routeNameSchema.optional(),
  channel: identifierSchema(64).optional(),
  label: Label.optional(),
  status: InboxStatus.optional(),
  assignee: identifierSchema(256).optional(),
});
export type InboxListQuery = z.infer<typeof inboxListQuery>;

const Row = z.object({
  route_name: z.string(),
  thread_id: z.string(),
  channel: z.string().nullable(),
  client_address: z.string().nullable(),
  last_activity_at: z.string(),
  message_count: z.coerce.number(),
  last_status: z.string(),
  inbox_status: z.string().nullable(),
  assignee: z.string().nullable(),
  waiting_since: z.number().nullable(),
  labels: z.string().nullable(),
  rated_down: z.coerce.number(),
});
type Row = z.infer<typeof Row>;

export const InboxListItem = z.object({
  route_name: z.string(),
  thread_id: z.string(),
  channel: z.string().nullable(),
  client_address: z.string().nullable(),
  last_activity_at: z.string(),
  message_count: z.number(),
  last_status: z.string(),
  inbox_status: InboxStatus,
  assignee: z.string().nullable(),
  waiting_since: z.string().nullable(),
  labels: z.array(z.string()),
  /** How many of the thread's answers their customer rated down (docs/inbox.md, "Answer feedback"). */
  rated_down: z.number().int(),
});
export type InboxListItem = z.infer<typeof InboxListItem>;
export const inboxListPage = pageSchema(InboxListItem);

function item(r: Row): InboxListItem {
  const status = (INBOX_STATUSES as readonly string[]).includes(r.inbox_status ?? "") ? (r.inbox_status as InboxStatus) : "pending";
  return {
    route_name: r.route_name,
    thread_id: r.thread_id,
    channel: r.channel,
    client_address: r.client_address,
    last_activity_at: r.last_activity_at,
    message_count: r.message_count,
    last_status: r.last_status,
    inbox_status: status,
    assignee: r.assignee,
    waiting_since: r.waiting_since === null ? null : new Date(r.waiting_since).toISOString(),
    labels: r.labels ? (JSON.parse(r.labels) as string[]) : [],
    rated_down: r.rated_down,
  };
}

/** What the condition sees of a listed thread. */
function conditionThread(i: InboxListItem): ConditionThread {
  return {
    route_name: i.route_name,
    thread_id: i.thread_id,
    assignee: i.assignee,
    status: i.inbox_status,
    labels: i.labels,
    waiting: i.waiting_since !== null,
  };
}

/** Rows listed before the inbox existed have no status: they read as pending. */
const STATUS = sql`COALESCE(t.inbox_status, 'pending')`;

function where(q: InboxListQuery, caller: string): SqlFragment {
  const parts: SqlFragment[] = [];
  if (q.view === "waiting") parts.push(sql`t.waiting_since IS NOT NULL`);
  if (q.view === "mine") parts.push(sql`t.assignee = ${caller} AND ${STATUS} <> 'resolved'`);
  if (q.view === "unassigned") parts.push(sql`t.assignee IS NULL AND ${STATUS} = 'open'`);
  if (q.view === "all") parts.push(sql`${STATUS} <> 'resolved'`);
  if (q.view === "resolved") parts.push(sql`${STATUS} = 'resolved'`);
  if (q.view === "rated_down") parts.push(sql`t.rated_down > 0`);
  if (q.route !== undefined) parts.push(sql`t.route_name = ${q.route}`);
  if (q.channel !== undefined) parts.push(sql`r.channel = ${q.channel}`);
  if (q.status !== undefined) parts.push(sql`${STATUS} = ${q.status}`);
  if (q.assignee !== undefined) parts.push(sql`t.assignee = ${q.assignee}`);
  if (q.label !== undefined) parts.push(sql`EXISTS (SELECT 1 FROM json_each(t.labels) WHERE json_each.value = ${q.label})`);
  return parts.reduce((acc, p) => sql`${acc} AND ${p}`, sql`1 = 1`);
}

function order(q: InboxListQuery): SqlFragment {
  // The waiting view serves the longest wait first; the others the newest activity.
  if (q.view === "waiting") return sql`ORDER BY t.waiting_since ASC, t.thread_id ASC`;
  return sql`ORDER BY t.last_activity_at DESC, t.thread_id DESC`;
}

const COLS = sql`t.route_name, t.thread_id, r.channel, t.client_address, t.last_activity_at, t.message_count, t.last_status,
  t.inbox_status, t.assignee, t.waiting_since, t.labels, t.rated_down`;

/** A page of the inbox for `principal` (its user_id is "mine"). */
export async function listInbox(db: D1Database, principal: Principal, q: InboxListQuery, w: Window): Promise<Page<InboxListItem>> {
  const filter = where(q, principal.key.user_id);
  const base = sql`FROM threads t JOIN routes r ON r.route_name = t.route_name WHERE ${filter}`;
  if (!principalReadsThread(principal)) {
    const rows = d1(db)`SELECT ${COLS} ${base} ${order(q)} LIMIT ${w.pageSize} OFFSET ${w.offset}`;
    const count = d1(db)`SELECT COUNT(*) AS n ${base}`;
    const [page, counted] = await batch(db, [rows, count]);
    return toPage(rowsOf(Row, page.results, rows.text).map(item), rowsOf(CountRow, counted.results, count.text)[0]?.n ?? 0, w);
  }
  // The key's condition decides per thread: a post-scan, bounded like a filtered route listing.
  const scan = d1(db)`SELECT ${COLS} ${base} ${order(q)} LIMIT ${THREAD_SCAN_BUDGET + 1}`;
  const [scanned] = await batch(db, [scan]);
  const rows = rowsOf(Row, scanned.results, scan.text);
  const now = new Date();
  const kept: InboxListItem[] = [];
  for (const r of rows.slice(0, THREAD_SCAN_BUDGET).map(item)) {
    if (await principalConditionsAllow(principal, now, undefined, undefined, conditionThread(r))) kept.push(r);
  }
  return toPage(kept.slice(w.offset, w.offset + w.pageSize), kept.length, w, rows.length > THREAD_SCAN_BUDGET);
}
