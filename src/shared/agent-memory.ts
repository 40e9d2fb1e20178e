/** Agent memory (checkpoints): one ordered list of chat messages per thread id. */
import { z } from "zod";
import { JsonValue } from "../platform/http/bounded-json";
import { parseStored } from "../platform/persistence/stored-json";

/**
 * One stored chat message, in the OpenAI chat-completions shape the llm agent replays; read back
 * from storage through this schema (corrupt rows fail loudly, never half-parse). `tool_calls` is
 * a `JsonValue`, not `unknown`, so the thread object's `checkpointRead` keeps its stub type.
 */
export const CheckpointMessage = z.object({
  role: z.enum(["system", "user", "assistant", "tool"]),
  content: z.string().nullable(),
  tool_calls: JsonValue.optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
});
export type CheckpointMessage = z.infer<typeof CheckpointMessage>;

/** Read, append and delete a thread's memory. Every provider implements the same contract. */
export interface CheckpointStore {
  /** The thread's messages oldest first; an unknown or expired thread reads as `[]`. */
  read(thread_id: string): Promise<CheckpointMessage[]>;
  /** Appends in order and refreshes the thread's idle TTL. */
  append(thread_id: string, messages: CheckpointMessage[]): Promise<void>;
  /** Forgets the thread; deleting an unknown thread is not an error. */
  delete(thread_id: string): Promise<void>;
}

/** Parses one stored message; a row that does not parse is corrupt storage (a 500, not a 400). */
export function parseStoredMessage(json: string): CheckpointMessage {
  const m = parseStored(CheckpointMessage, json, "checkpoint message");
  // Drop absent optionals so a read round-trips to exactly what was appended.
  const out: CheckpointMessage = { role: m.role, content: m.content };
  if (m.tool_calls !== undefined) out.tool_calls = m.tool_calls;
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  if (m.name !== undefined) out.name = m.name;
  return out;
}

/** Idle expiry instant for a write at `nowMs` (null = keep forever). Pure. */
export function idleExpiry(nowMs: number, ttlMinutes: number | null): number | null {
  return ttlMinutes === null ? null : nowMs + Math.round(ttlMinutes * 60_000);
}
