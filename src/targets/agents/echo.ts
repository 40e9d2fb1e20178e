/** The built-in `echo` agent: answers `echo: <text>` and keeps thread memory. */
import type { TargetContext } from "../context";
import type { Emit } from "./events";

export async function runEchoAgent(ctx: TargetContext, input: { thread_id: string; user_message: string }, emit: Emit): Promise<string> {
  const text = `echo: ${input.user_message}`;
  // Memory lands before the final frame, so a run that reports success has been remembered.
  await ctx.checkpoints.append(input.thread_id, [
    { role: "user", content: input.user_message },
    { role: "assistant", content: text },
  ]);
  await emit({ type: "message_delta", text });
  await emit({ type: "message_final", text });
  return text;
}
