/** What an agent run reports while it runs (the SSE frames of decisions §4, minus stream.*). */
export type AgentEvent =
  | { type: "message_delta"; text: string }
  | { type: "tool_call_step"; tool: string; args: unknown; call_id: string }
  | { type: "tool_result_step"; tool: string; call_id: string; result: unknown; is_error: boolean }
  | { type: "message_final"; text: string | null }
  /** The run parked on ask_user (platform facts B2): the agent run door's last frame before stream.end. */
  | { type: "suspended_final"; interaction_ids: string[]; thread_id: string; expiry_at: string };

export type Emit = (e: AgentEvent) => Promise<void>;

/** A deliberate agent failure; its message is safe for callers (no secrets, no endpoint text). */
export class AgentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AgentError";
  }
}

/** A null, empty or whitespace-only answer is a deliberate silence (spec §4.2). */
export function toAnswer(text: string | null | undefined): string | null {
  return typeof text === "string" && text.trim() !== "" ? text : null;
}
