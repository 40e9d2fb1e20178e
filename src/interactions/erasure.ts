/**
 * Erasing a thread's interactions: a thread forget or a person erase removes what the
 * thread's runs asked and were answered, like the thread's records: each interaction's object
 * (question, answer, parked run, stored media), its listing row and its stream events. A pending
 * one never resumes. Best effort per interaction: a failure is logged (no values) and the others go on.
 */
import { interactionHub, interactionStub } from "./rpc";
import type { Env } from "../platform/env";
import { interactionsOfThread } from "./index-store";
import { d1, run } from "../platform/persistence/d1";

/** Discards the thread's interactions: `parked` (its own notes) and every one its listing names. Answers how many were asked to go. */
export async function eraseThreadInteractions(env: Env, threadId: string, parked: readonly string[]): Promise<number> {
  const listed = await interactionsOfThread(env.DB, threadId);
  const ids = [...new Set([...parked, ...listed])];
  await Promise.all(
    ids.map((id) =>
      interactionStub(env, id)
        .discard()
        .catch((err: unknown) => console.error("interaction erasure: discarding one failed", err instanceof Error ? err.message : "unknown error")),
    ),
  );
  // Whatever an object's alarm may still have been writing while it was discarded: the thread's
  // listing rows and events go again, by thread and by id.
  await run(d1(env.DB)`DELETE FROM interactions WHERE thread_id = ${threadId}`);
  if (ids.length) await interactionHub(env).drop(ids);
  return ids.length;
}
