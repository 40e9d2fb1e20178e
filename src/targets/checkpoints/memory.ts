import { type CheckpointMessage, type CheckpointStore, idleExpiry } from "../../shared/agent-memory";

/** Most threads one isolate keeps; the least recently written is dropped past this. */
export const MEMORY_MAX_THREADS = 10_000;
/**
 * Most characters of messages (as JSON) one isolate keeps over all threads, about 16 MB of heap:
 * past it the least recently written threads are dropped, and a thread that alone exceeds it
 * loses its oldest messages.
 */
export const MEMORY_MAX_CHARS = 8_000_000;

interface Entry {
  messages: CheckpointMessage[];
  expiresAt: number | null;
  /** The messages' size as JSON, in characters. */
  chars: number;
}

// Per isolate by design (`memory` provider): lost on restart, never shared between isolates.
const threads = new Map<string, Entry>();
let totalChars = 0;

const charsOf = (m: CheckpointMessage) => JSON.stringify(m).length;

function drop(threadId: string): void {
  const e = threads.get(threadId);
  if (!e) return;
  threads.delete(threadId);
  totalChars -= e.chars;
}

/** What the provider holds in this isolate (tests, and the bounds above). */
export function memoryCheckpointUse(): { threads: number; chars: number } {
  return { threads: threads.size, chars: totalChars };
}

function live(threadId: string, nowMs: number): Entry | undefined {
  const e = threads.get(threadId);
  if (!e) return undefined;
  if (e.expiresAt !== null && e.expiresAt <= nowMs) {
    drop(threadId);
    return undefined;
  }
  return e;
}

/**
 * The `memory` provider: a per-isolate map. It honours the idle TTL on access, like `kv`,
 * and caps the threads (MEMORY_MAX_THREADS) and the characters (MEMORY_MAX_CHARS) it keeps, least
 * recently written first, so a long-lived isolate cannot grow without bound.
 */
export function memoryCheckpointStore(ttlMinutes: number | null, now: () => Date): CheckpointStore {
  return {
    async read(threadId) {
      const e = live(threadId, now().getTime());
      return e ? e.messages.map((m) => structuredClone(m)) : [];
    },
    async append(threadId, messages) {
      const nowMs = now().getTime();
      const prior = live(threadId, nowMs);
      drop(threadId); // re-insert so Map order is least-recently-written first
      const added = messages.map((m) => structuredClone(m));
      const entry: Entry = {
        messages: [...(prior?.messages ?? []), ...added],
        expiresAt: idleExpiry(nowMs, ttlMinutes),
        chars: (prior?.chars ?? 0) + added.reduce((n, m) => n + charsOf(m), 0),
      };
      // A thread that alone exceeds the bound keeps its newest messages.
      while (entry.chars > MEMORY_MAX_CHARS && entry.messages.length > 1) {
        const oldest = entry.messages.shift();
        if (oldest === undefined) break;
        entry.chars -= charsOf(oldest);
      }
      threads.set(threadId, entry);
      totalChars += entry.chars;
      for (const oldest of threads.keys()) {
        if (oldest === threadId || (threads.size <= MEMORY_MAX_THREADS && totalChars <= MEMORY_MAX_CHARS)) break;
        drop(oldest);
      }
    },
    async delete(threadId) {
      drop(threadId);
    },
  };
}
