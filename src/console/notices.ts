/**
 * What the console is told about a listing push. Pure. A push carries the thread's
 * listing row and its newly failed records; the console gets the route, the thread id, the status
 * and the instant, or the failed record's id, so it knows what to re-read through the doors (which
 * check the reader's grants). No message text, address detail or error text is ever sent.
 */
import type { ConsoleNotice } from "./rpc";
import type { ListingPush } from "../shards/rpc";

/** The notices of one push, grouped by route (a push without a row, a thread's removal, tells nothing). */
export function noticesOfPush(p: ListingPush): Map<string, ConsoleNotice[]> {
  const byRoute = new Map<string, ConsoleNotice[]>();
  const add = (route: string, n: ConsoleNotice) => {
    const list = byRoute.get(route);
    if (list) list.push(n);
    else byRoute.set(route, [n]);
  };
  if (p.row)
    add(p.row.route_name, { type: "thread", route_name: p.row.route_name, thread_id: p.row.thread_id, status: p.row.last_status, at: p.row.last_activity_at });
  for (const f of p.failed) add(f.route_name, { type: "failed", route_name: f.route_name, thread_id: f.thread_id, message_id: f.message_id });
  return byRoute;
}
