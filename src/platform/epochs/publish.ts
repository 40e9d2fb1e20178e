/**
 * Publishing D1 writes to the access epochs: the triggers of migrations/0026_access_changes.sql
 * record, with every write, the subjects whose cached reads it may change; this bumps their
 * tokens, then deletes the rows it published. Run before a writing request answers (app.ts), after
 * the writes objects make themselves (pending saves), and by the cron as a backstop.
 *
 * Publishing twice is harmless (a bump only makes a token newer), so concurrent publishers need
 * no coordination: each deletes only rows up to the last one it bumped.
 */
import { z } from "zod";
import type { Env } from "../env";
import { all, d1, run } from "../persistence/d1";
import { bumpEpochs } from "./rpc";

const Change = z.object({ seq: z.number().int(), subject: z.string() });

/** Rows published per pass (a role held by many keys records many). */
const PAGE = 500;

/** Bumps every recorded subject and deletes what it published; answers how many subjects it bumped. */
export async function publishAccessChanges(env: Env): Promise<number> {
  let bumped = 0;
  for (;;) {
    const rows = await all(Change, d1(env.DB)`SELECT seq, subject FROM access_changes ORDER BY seq LIMIT ${PAGE}`);
    if (rows.length === 0) return bumped;
    const subjects = [...new Set(rows.map((r) => r.subject))];
    await bumpEpochs(env, subjects);
    bumped += subjects.length;
    await run(d1(env.DB)`DELETE FROM access_changes WHERE seq <= ${rows[rows.length - 1].seq}`);
    if (rows.length < PAGE) return bumped;
  }
}

/** Statements that may fire the triggers (a read never does). */
const WRITE = /^\s*(?:--[^\n]*\n\s*)*(?:INSERT|UPDATE|DELETE|REPLACE|WITH)\b/i;

/**
 * `db`, noting whether a statement that may write was prepared or executed through it. Only the
 * requests that wrote pay for a publication (one D1 read when nothing was recorded), so the
 * message doors, which never write D1, pay nothing.
 */
export function trackWrites(db: D1Database): { db: D1Database; wrote: () => boolean } {
  let wrote = false;
  const tracked: D1Database = {
    prepare(query: string) {
      if (WRITE.test(query)) wrote = true;
      return db.prepare(query);
    },
    batch(statements) {
      return db.batch(statements);
    },
    exec(query: string) {
      wrote = true;
      return db.exec(query);
    },
    withSession(constraintOrBookmark) {
      wrote = true;
      return db.withSession(constraintOrBookmark);
    },
    dump() {
      return db.dump();
    },
  };
  return { db: tracked, wrote: () => wrote };
}

/**
 * The Worker's fetch handler with publication: a request that wrote D1 publishes what its writes
 * recorded before its response goes out, so the next request (any isolate's) sees them. A failed
 * publication is logged and left to the next publisher (the rows stay); the write itself stood.
 */
export function publishingWrites<E extends Env>(
  fetch: (request: Request, env: E, ctx: ExecutionContext) => Response | Promise<Response>,
): (request: Request, env: E, ctx: ExecutionContext) => Promise<Response> {
  return async (request, env, ctx) => {
    const tracked = trackWrites(env.DB);
    const response = await fetch(request, { ...env, DB: tracked.db }, ctx);
    if (tracked.wrote()) {
      try {
        await publishAccessChanges(env);
      } catch (err) {
        console.error(JSON.stringify({ event: "access_changes_publish_failed", error: err instanceof Error ? err.message : String(err) }));
      }
    }
    return response;
  };
}
