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
import { SERVER_ERROR_CODES, type ServerErrorCode, describeFailure } from "../http/errors";
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
 * Writing statements prepared in this isolate so far. A request compares it before and after:
 * a request that ran beside a writing one may publish needlessly (one empty read), never miss.
 */
let writesPrepared = 0;

/** `db`, counting the statements that may write as they are prepared or executed through it. */
function countingWrites(db: D1Database): D1Database {
  return {
    prepare(query: string) {
      if (WRITE.test(query)) writesPrepared++;
      return db.prepare(query);
    },
    batch(statements) {
      return db.batch(statements);
    },
    exec(query: string) {
      writesPrepared++;
      return db.exec(query);
    },
    withSession(constraintOrBookmark) {
      writesPrepared++;
      return db.withSession(constraintOrBookmark);
    },
    dump() {
      return db.dump();
    },
  };
}

/**
 * The env each request runs with, one per runtime env: stable, because the settings and other
 * per-isolate caches are keyed by the env object.
 */
const countingEnvs = new WeakMap<object, object>();

function countingEnv<E extends Env>(env: E): E {
  const known = countingEnvs.get(env);
  if (known) return known as E;
  const made: E = { ...env, DB: countingWrites(env.DB) };
  countingEnvs.set(env, made);
  return made;
}

/** Attempts at publishing a writing request's changes, and the pause before each retry. */
export const PUBLISH_RETRY_DELAYS_MS = [0, 50, 250] as const;

/** The code of the 503 a writing request answers when its changes could not be published. */
export const UNPUBLISHED_CODE = "access_changes_unpublished" satisfies ServerErrorCode;

/**
 * The Worker's fetch handler with publication: a request that wrote D1 publishes what its writes
 * recorded before its response goes out, so the next request (any isolate's) sees them. The
 * message doors never write D1, so they pay nothing.
 *
 * Publication fails closed. A publication that fails is retried (PUBLISH_RETRY_DELAYS_MS); when
 * every attempt failed, the request's own answer is dropped and it answers 503 UNPUBLISHED_CODE,
 * logged once (its `http_5xx` line): the write stood, but other isolates may still
 * serve what it changed (a revoked key) until a later publication, so the caller must not be told
 * it is in force. The recorded rows stay for the next publisher: any writing request, and the cron.
 */
export function publishingWrites<E extends Env>(
  fetch: (request: Request, env: E, ctx: ExecutionContext) => Response | Promise<Response>,
  delaysMs: readonly number[] = PUBLISH_RETRY_DELAYS_MS,
): (request: Request, env: E, ctx: ExecutionContext) => Promise<Response> {
  return async (request, env, ctx) => {
    const before = writesPrepared;
    const response = await fetch(request, countingEnv(env), ctx);
    if (writesPrepared === before) return response;
    let failure: unknown = null;
    for (const delay of delaysMs) {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      try {
        await publishAccessChanges(env);
        return response;
      } catch (err) {
        failure = err;
      }
    }
    // The one log line of this 5xx, in the shape app.onError gives every other one (docs/operations.md).
    console.error(
      JSON.stringify({
        event: "http_5xx",
        status: SERVER_ERROR_CODES[UNPUBLISHED_CODE],
        code: UNPUBLISHED_CODE,
        route: `${request.method} (a writing request, published after its answer)`,
        reason: `the access changes could not be published after ${delaysMs.length} attempts: ${describeFailure(failure)}`,
      }),
    );
    await response.body?.cancel().catch(() => undefined);
    return Response.json(
      {
        error: "the change was saved but could not be put in force everywhere yet; read it back, and retry it if it still needs doing",
        code: UNPUBLISHED_CODE,
      },
      { status: SERVER_ERROR_CODES[UNPUBLISHED_CODE], headers: { "retry-after": "5" } },
    );
  };
}
