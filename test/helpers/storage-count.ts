/**
 * Counts what a Durable Object asks of its own storage: every SQLite statement (`sql.exec`), every
 * key-value call (`get`, `put`, `delete`, `deleteAll`), every alarm call and every `sync`.
 *
 * No production hook: the counter patches the object's own `ctx.storage` (reached through
 * `runInDurableObject`, which hands the test the instance's state) with wrappers that record each
 * call and pass it on, and restores it afterwards. Statements the test itself runs on the same
 * storage (reading rows back, moving a timer into the past) are left out by running them inside
 * `uncounted`.
 */
import { runInDurableObject } from "cloudflare:test";

export interface StorageCall {
  /** "sql" for a statement, else the storage method's name. */
  kind: string;
  /** The statement, whitespace collapsed (sql calls only). */
  sql?: string;
}

const squash = (sql: string) => sql.replace(/\s+/g, " ").trim();

/** The storage methods besides `sql.exec` that the counter records. */
const METHODS = ["get", "put", "delete", "deleteAll", "getAlarm", "setAlarm", "deleteAlarm", "sync"] as const;

type Patchable = Record<string, unknown>;

export class StorageCounter {
  readonly calls: StorageCall[] = [];
  private paused = 0;

  /** Starts counting `stub`'s object (created now if new); the returned function stops and restores it. */
  async attach(stub: DurableObjectStub): Promise<() => Promise<void>> {
    const record = (call: StorageCall) => {
      if (this.paused === 0) this.calls.push(call);
    };
    await runInDurableObject(stub, (_obj, state) => {
      const storage = state.storage as unknown as Patchable;
      const sql = state.storage.sql;
      const exec = sql.exec;
      (sql as unknown as Patchable).exec = (query: string, ...bindings: unknown[]) => {
        record({ kind: "sql", sql: squash(query) });
        return exec.call(sql, query, ...bindings);
      };
      for (const name of METHODS) {
        const original = storage[name];
        if (typeof original !== "function") continue;
        storage[name] = (...args: unknown[]) => {
          record({ kind: name });
          return original.apply(state.storage, args);
        };
      }
    });
    return async () => {
      await runInDurableObject(stub, (_obj, state) => {
        // The wrappers are own properties over the prototype's methods: deleting them restores those.
        delete (state.storage.sql as unknown as Patchable).exec;
        for (const name of METHODS) delete (state.storage as unknown as Patchable)[name];
      });
    };
  }

  /** Runs `fn` without counting what it does (the test's own reads and rewrites). */
  async uncounted<T>(fn: () => Promise<T>): Promise<T> {
    this.paused++;
    try {
      return await fn();
    } finally {
      this.paused--;
    }
  }

  /** SQLite statements recorded. */
  get statements(): number {
    return this.calls.filter((c) => c.kind === "sql").length;
  }

  /** Recorded calls of `kind`. */
  count(kind: string): number {
    return this.calls.filter((c) => c.kind === kind).length;
  }

  /** Every recorded call, one a line, for a failure message. */
  describe(): string {
    return this.calls.map((c, i) => `  ${i + 1}. ${c.kind}${c.sql ? `: ${c.sql.slice(0, 140)}` : ""}`).join("\n");
  }

  /** Resolves once nothing was recorded for `quietMs` (work the object goes on with after answering). */
  async quiet(quietMs = 400, maxMs = 10_000): Promise<void> {
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
