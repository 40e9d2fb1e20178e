/**
 * A thread's live turn (docs/web-channel-client.md "Live turns"): what the thread object holds in
 * memory about the turn it is running, never stored. The web page's frames, the console's turn
 * notices and the operator's live door all speak these shapes.
 */
import { z } from "zod";

/**
 * Where a turn stands: `queued` (accepted, its target not running yet), `running`, `tool` (a tool
 * call of the run in flight), `waiting` (the run parked on a question; the thread waits for the
 * next inbound), `settled` (answered, silent, failed, stopped, or silenced by manual mode).
 */
export const TurnState = z.enum(["queued", "running", "tool", "waiting", "settled"]);
export type TurnState = z.infer<typeof TurnState>;

/** The states a page shows "typing…" in. */
export const TYPING_STATES: ReadonlySet<TurnState> = new Set(["queued", "running", "tool"]);

/**
 * The thread's turn as the live door answers it: the running turn (else the oldest queued one,
 * else the last one that ended), its state, and its draft (the answer's text since the run's last
 * tool call; null when nothing runs). `message_id` is null on a thread this instance saw no turn of.
 */
export const LiveTurnView = z.object({
  message_id: z.string().nullable(),
  state: TurnState,
  draft: z.string().nullable(),
});
export type LiveTurnView = z.infer<typeof LiveTurnView>;

/** What a stop door answers: whether a running turn was stopped. */
export const StopAnswer = z.object({ stopped: z.boolean() });
export type StopAnswer = z.infer<typeof StopAnswer>;
