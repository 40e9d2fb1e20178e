/**
 * What an agent run reports while it runs (the SSE frames of decisions §4, minus stream.*).
 * `message_delta.text` is a chunk to append: the deltas since the run's last `tool_call_step`
 * join into its `message_final.text`. An endpoint that does not stream sends one delta.
 */
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

/**
 * The run was stopped through its context's signal (`TargetContext.signal`). Not a failure: the run
 * stores no memory, and what it drafted so far is its caller's business.
 */
export class TurnStopped extends Error {
  constructor() {
    super("the turn was stopped");
    this.name = "TurnStopped";
  }
}

/** Throws TurnStopped once `signal` aborted; a run asks before every model call and tool call. */
export function throwIfStopped(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new TurnStopped();
}

/** A null, empty or whitespace-only answer is a deliberate silence (spec §4.2). */
export function toAnswer(text: string | null | undefined): string | null {
  return typeof text === "string" && text.trim() !== "" ? text : null;
}

/**
 * Forwards an answer's text as `message_delta` chunks as it arrives. A leading blank stretch is
 * held back until text that is not blank follows, so an answer that turns out silent emits no
 * delta, and the deltas always join into `toAnswer(text)`.
 */
export class DeltaForwarder {
  /** Everything pushed so far. */
  text = "";
  private sent = 0;

  constructor(private readonly emit: Emit) {}

  async push(chunk: string): Promise<void> {
    if (!chunk) return;
    this.text += chunk;
    if (this.sent === 0 && toAnswer(this.text) === null) return;
    const out = this.text.slice(this.sent);
    this.sent = this.text.length;
    await this.emit({ type: "message_delta", text: out });
  }
}
