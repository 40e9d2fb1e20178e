/** Agent memory (checkpoints): one ordered list of chat messages per thread id. */
import { z } from "zod";

/** One stored chat message, in the OpenAI chat-completions shape the llm agent replays. */
export interface CheckpointMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_calls?: unknown;
  tool_call_id?: string;
  name?: string;
}

/** Read, append and delete a thread's memory. Every provider implements the same contract. */
export interface CheckpointStore {
  /** The thread's messages oldest first; an unknown or expired thread reads as `[]`. */
  read(thread_id: string): Promise<CheckpointMessage[]>;
  /** Appends in order and refreshes the thread's idle TTL. */
  append(thread_id: string, messages: CheckpointMessage[]): Promise<void>;
  /** Forgets the thread; deleting an unknown thread is not an error. */
  delete(thread_id: string): Promise<void>;
}

/** Validates messages read back from storage (corrupt rows fail loudly, never half-parse). */
export const checkpointMessageSchema = z.object({
  role: z.enum(["system", "user", "assistant", "tool"]),
  content: z.string().nullable(),
  tool_calls: z.unknown().optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
});

/** Parses one stored message; a row that does not parse is corrupt storage (a 500, not a 400). */
export function parseStoredMessage(json: string): CheckpointMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error("checkpoint message is not valid JSON");
  }
  const parsed = checkpointMessageSchema.safeParse(raw);
  if (!parsed.success) throw new Error("checkpoint message failed validation");
  const m = parsed.data;
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
