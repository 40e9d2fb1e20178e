/**
 * Counts D1 work per side of a path: a wrapper on the `DB` binding records every round
 * trip (`prepare(...).run/all/first/raw`, `batch([...])`, `exec`) and how many statements it
 * carried (a batch is one round trip of N statements).
 *
 * No production hook: the Worker side is the Worker's own `fetch` (src/index.ts) called with an env
 * whose `DB` is wrapped; a thread object's side is its instance `env` swapped through
 * `runInDurableObject` (the object reads its env through `() => this.env`, so bindings follow it).
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Env } from "../../src/platform/env";
import { fetchWorkerDirect } from "./direct-fetch";
import { BASE } from "./http";
import { SHARD_COUNT, shardStub } from "../../src/shards/rpc";
import { stubFor } from "./threads";

export type Side = "worker" | "thread" | "shard";

export interface D1Call {
  side: Side;
  /** run | all | first | raw | batch | exec */
  kind: string;
  statements: number;
  /** The SQL of each statement, whitespace collapsed (for failure messages). */
  sql: string[];
}

export interface SideCount {
  roundTrips: number;
  statements: number;
}

const squash = (sql: string) => sql.replace(/\s+/g, " ").trim();

/** A prepared statement that records its round trip when it runs. */
class CountedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly sql: string,
    private readonly record: (kind: string, sql: string[]) => void,
  ) {}

  bind(...values: unknown[]): CountedStatement {
    return new CountedStatement(this.inner.bind(...values), this.sql, this.record);
  }

  first(column?: string): Promise<unknown> {
    this.record("first", [this.sql]);
    return column === undefined ? this.inner.first() : this.inner.first(column);
  }

  run(): Promise<D1Result> {
    this.record("run", [this.sql]);
    return this.inner.run();
  }

  all(): Promise<D1Result> {
    this.record("all", [this.sql]);
    return this.inner.all();
  }

  raw(options?: { columnNames?: boolean }): Promise<unknown[]> {
    this.record("raw", [this.sql]);
    return options?.columnNames ? this.inner.raw({ columnNames: true }) : this.inner.raw();
  }

  /** The SQL this statement was prepared from (batch records it). */
  get text(): string {
    return this.sql;
  }
}

/**
 * Reads an isolate makes on a clock rather than per message: the settings overlay's generation
 * check, at most once per `SETTINGS_REFRESH_SECONDS` (2 s by default) per isolate whatever the
 * traffic (src/config/isolate-settings.ts). A counted window longer than that interval, as on a
 * busy machine, may see one; `summary` leaves them out and `periodic` bounds them.
 */
const PERIODIC_SQL = new Set(["SELECT generation, updated_at FROM settings_generation WHERE id = 1"]);
const isPeriodic = (c: D1Call) => c.kind !== "batch" && c.sql.every((s) => PERIODIC_SQL.has(s));

/** Records D1 calls made through the bindings it wraps. */
export class D1Counter {
  readonly calls: D1Call[] = [];
  /** When counting began, to bound the periodic reads by the window's length. */
  readonly startedAt = Date.now();

  /** `db` wrapped: every round trip made through it is recorded under `side`. */
  wrap(db: D1Database, side: Side): D1Database {
    const record = (kind: string, sql: string[]) => void this.calls.push({ side, kind, statements: sql.length, sql });
    const wrapped = {
      prepare: (query: string) => new CountedStatement(db.prepare(query), squash(query), record),
      batch: (statements: Array<D1PreparedStatement | CountedStatement>) => {
        record(
          "batch",
          statements.map((s) => (s instanceof CountedStatement ? s.text : "(unwrapped statement)")),
        );
        return db.batch(statements.map((s) => (s instanceof CountedStatement ? s.inner : s)));
      },
      exec: (query: string) => {
        // One round trip; the statements are the SQL's `;`-separated parts.
        record("exec", query.split(";").map(squash).filter(Boolean));
        return db.exec(query);
      },
    };
    // Anything else (dump, withSession) would bypass the count: fail loudly instead.
    return new Proxy(wrapped, {
      get(target, prop, receiver) {
        if (prop in target) return Reflect.get(target, prop, receiver);
        if (prop === "then") return undefined;
        throw new Error(`D1Counter: DB.${String(prop)} is not counted; extend test/helpers/d1-count.ts`);
      },
    }) as unknown as D1Database;
  }

  /** Round trips and statements of `side`, the periodic reads left out. */
  count(side: Side): SideCount {
    const mine = this.calls.filter((c) => c.side === side && !isPeriodic(c));
    return { roundTrips: mine.length, statements: mine.reduce((n, c) => n + c.statements, 0) };
  }

  /** The per-message path's sides (doors and thread) and their totals, the shape the path tests assert. */
  summary(): { worker: SideCount; thread: SideCount; roundTrips: number; statements: number } {
    const worker = this.count("worker");
    const thread = this.count("thread");
    return { worker, thread, roundTrips: worker.roundTrips + thread.roundTrips, statements: worker.statements + thread.statements };
  }

  /** The periodic reads seen, and how many the window's length allows (one per 2 s interval begun). */
  periodic(): { seen: number; allowed: number } {
    return { seen: this.calls.filter(isPeriodic).length, allowed: 1 + Math.floor((Date.now() - this.startedAt) / 2_000) };
  }

  /** Every recorded round trip, one a line, for a failure message. */
  describe(): string {
    return this.calls
      .map((c, i) => `  ${i + 1}. [${c.side}] ${c.kind}${c.kind === "batch" ? ` of ${c.statements}` : ""}: ${c.sql.map((s) => s.slice(0, 90)).join(" | ")}`)
      .join("\n");
  }

  /** Resolves once no call was recorded for `quietMs` (work the object continues after answering). */
  async quiet(quietMs = 150, maxMs = 5_000): Promise<void> {
    const start = Date.now();
    let seen = this.calls.length;
    let since = Date.now();
    while (Date.now() - start < maxMs) {
      await new Promise((r) => setTimeout(r, 25));
      if (this.calls.length !== seen) {
        seen = this.calls.length;
        since = Date.now();
      } else if (Date.now() - since >= quietMs) return;
    }
  }
}

export interface CountedAnswer {
  status: number;
  text: string;
  json: any;
}

/**
 * Calls the Worker's own fetch handler (src/index.ts) with `DB` wrapped by `counter`, then waits
 * for the work it handed to waitUntil. Same isolate and module graph as the Worker under test.
 */
export async function countedFetch(
  counter: D1Counter,
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: string } = {},
): Promise<CountedAnswer> {
  const request = new Request(`${BASE}${path}`, { method, headers: init.headers, body: init.body });
  const { status, text, json } = await fetchWorkerDirect(request, { ...env, DB: counter.wrap(env.DB, "worker") });
  return { status, text, json };
}

/**
 * Makes thread `threadId`'s object (created now if new) use a `DB` wrapped by `counter` until the
 * returned function restores its own env.
 */
export async function countThread(counter: D1Counter, threadId: string): Promise<() => Promise<void>> {
  return countObject(counter, stubFor(threadId), "thread");
}

/**
 * Makes every IndexShard use a `DB` wrapped by `counter` (side "shard"), with `vars` over its
 * env (a flush policy, say), until the returned function restores their own envs.
 */
export async function countShards(counter: D1Counter, vars: Record<string, string> = {}): Promise<() => Promise<void>> {
  const restores = await Promise.all(
    Array.from({ length: SHARD_COUNT }, (_, i) => countObject(counter, shardStub(env, i) as unknown as DurableObjectStub, "shard", vars)),
  );
  return async () => {
    for (const r of restores) await r();
  };
}

async function countObject(counter: D1Counter, stub: DurableObjectStub, side: Side, vars: Record<string, string> = {}): Promise<() => Promise<void>> {
  let original: Env | null = null;
  await runInDurableObject(stub, (obj) => {
    const o = obj as unknown as { env: Env };
    original = o.env;
    o.env = { ...o.env, ...vars, DB: counter.wrap(o.env.DB, side) };
  });
  return async () => {
    await runInDurableObject(stub, (obj) => {
      if (original) (obj as unknown as { env: Env }).env = original;
    });
  };
}
