import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";

export function stubFor(threadId: string) {
  return env.THREADS.get(env.THREADS.idFromName(threadId));
}

export interface RawRow {
  message_id: string;
  status: string;
  turn_state: string;
  delivery_due_at: number | null;
  delivery_lease_until: number | null;
  grace_until: number | null;
  expires_at: number | null;
  chunks_sent: number;
  record: string;
}

/** The thread object's raw record rows (bookkeeping included). */
export async function rawRows(threadId: string): Promise<RawRow[]> {
  return runInDurableObject(
    stubFor(threadId),
    (_obj, state) =>
      state.storage.sql
        .exec(
          "SELECT message_id, status, turn_state, delivery_due_at, delivery_lease_until, grace_until, expires_at, chunks_sent, record FROM records ORDER BY seq",
        )
        .toArray() as unknown as RawRow[],
  );
}

/** Moves the thread's clock forward for the named timers by rewriting them into the past. */
export async function makeDue(
  threadId: string,
  column: "delivery_due_at" | "grace_until" | "turn_lease_until" | "expires_at" | "delivery_lease_until",
): Promise<void> {
  await runInDurableObject(stubFor(threadId), (_obj, state) => {
    state.storage.sql.exec(`UPDATE records SET ${column} = 1 WHERE ${column} IS NOT NULL`);
  });
}

export async function runAlarm(threadId: string): Promise<boolean> {
  return runDurableObjectAlarm(stubFor(threadId));
}

/** Polls until `check` passes (for work the object continues after answering). */
export async function eventually<T>(read: () => Promise<T>, check: (v: T) => boolean, tries = 100): Promise<T> {
  let last = await read();
  for (let i = 0; i < tries && !check(last); i++) {
    await new Promise((r) => setTimeout(r, 20));
    last = await read();
  }
  return last;
}
