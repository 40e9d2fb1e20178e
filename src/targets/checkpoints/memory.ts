import { type CheckpointMessage, type CheckpointStore, idleExpiry } from "../model/agent-memory";

/** Most threads one isolate keeps; the least recently used is dropped past this. */
export const MEMORY_MAX_THREADS = 10_000;

interface Entry {
  messages: CheckpointMessage[];
  expiresAt: number | null;
}

// Per isolate by design (`memory` provider): lost on restart, never shared between isolates.
const threads = new Map<string, Entry>();

function live(threadId: string, nowMs: number): Entry | undefined {
  const e = threads.get(threadId);
  if (!e) return undefined;
  if (e.expiresAt !== null && e.expiresAt <= nowMs) {
    threads.delete(threadId);
    return undefined;
  }
  return e;
}

/**
 * The `memory` provider: a per-isolate map. It honours the idle TTL on access, like `kv`,
 * and caps the number of threads so a long-lived isolate cannot grow without bound.
 */
export function memoryCheckpointStore(ttlMinutes: number | null, now: () => Date): CheckpointStore {
  return {
    async read(threadId) {
      const e = live(threadId, now().getTime());
      return e ? e.messages.map((m) => structuredClone(m)) : [];
    },
    async append(threadId, messages) {
      const nowMs = now().getTime();
      const prior = live(threadId, nowMs)?.messages ?? [];
      threads.delete(threadId); // re-insert so Map order is least-recently-written first
      threads.set(threadId, { messages: [...prior, ...messages.map((m) => structuredClone(m))], expiresAt: idleExpiry(nowMs, ttlMinutes) });
      while (threads.size > MEMORY_MAX_THREADS) {
        const oldest = threads.keys().next().value;
        if (oldest === undefined) break;
        threads.delete(oldest);
      }
    },
    async delete(threadId) {
      threads.delete(threadId);
    },
  };
}
