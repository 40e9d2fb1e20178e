/**
 * Private notes, the operator's side (docs/inbox.md, "Private notes"): the doors' bodies, the
 * thread object's answers as the doors give them, and the one way a note reaches the agent: when
 * the route's inbox policy says `notes_in_agent_memory` and its target is an agent that keeps
 * memory, the note joins that memory as a system message. Nothing else ever carries a note: no
 * delivery, no callback, no channel.
 */
import { z } from "zod";
import type { Env } from "../../platform/env";
import { HttpError, describeFailure, serverError } from "../../platform/http/errors";
import { intactIdentifier, nonBlankText } from "../../platform/http/identifiers";
import type { Settings } from "../../platform/settings/settings";
import { agentKeepsMemory, appendAgentMemory } from "../../targets/agents/run";
import { createTargetContext } from "../../targets/context";
import { inboxPolicyFor } from "../inbox-policy";
import { MAX_NOTES_PER_THREAD, MAX_NOTE_CHARS, NoteView, noteView } from "../model/notes";
import type { Route } from "../model/route";
import { routeParams } from "../model/schemas";
import { threadStub } from "../model/thread-rpc";
import { threadIdField } from "./schemas";

export const noteBody = z.object({ thread_id: threadIdField, text: nonBlankText(MAX_NOTE_CHARS) }).strict();
export const noteParams = routeParams.extend({ note_id: intactIdentifier(z.string().min(1).max(64)) });
export const notesAnswer = z.object({ thread_id: z.string(), notes: z.array(NoteView) });
export const noteDeleted = z.object({ thread_id: z.string(), note_id: z.string(), deleted: z.literal(true) });

/** How a note reads in the agent's memory: marked as the operators', so the agent never takes it for the customer's words. */
export function noteMemoryText(text: string): string {
  return `[operator note, private: never shown to the customer] ${text}`;
}

/** The thread's live notes, oldest first; 404 when the thread holds no record. */
export async function listNotes(env: Env, threadId: string): Promise<NoteView[]> {
  const notes = await threadStub(env, threadId).notes();
  if (notes === null) throw new HttpError(404, "thread not found");
  return notes.map((n) => noteView(threadId, n));
}

/** The thread's live notes for the transcript's `include_notes` (none when it holds no record). */
export async function notesBeside(env: Env, threadId: string): Promise<NoteView[]> {
  return ((await threadStub(env, threadId).notes()) ?? []).map((n) => noteView(threadId, n));
}

/**
 * Writes a note by `by` on a thread of `route` (the door guarded it), then, when the route's policy
 * asks for it, appends it to the agent's memory. A failed append takes the note back (503: nothing
 * is kept), so a retry does not leave two.
 */
export async function addNote(env: Env, settings: Settings, route: Route, threadId: string, by: string, text: string): Promise<NoteView> {
  const stub = threadStub(env, threadId);
  const r = await stub.noteAdd(route.route_name, by, text);
  if (!r.ok) {
    if (r.reason === "full") throw new HttpError(409, `the thread holds ${MAX_NOTES_PER_THREAD} notes already; delete one first`, "notes_full");
    throw new HttpError(404, "thread not found");
  }
  try {
    await rememberNote(env, settings, route, threadId, text);
  } catch (err) {
    await stub.noteDelete(r.note.id, by, true);
    throw serverError("agent_memory_unavailable", "appending the note to the agent's memory failed; nothing was kept, retry later", {
      reason: `private note: the agent memory append failed: ${describeFailure(err)}`,
      retryAfterSeconds: 1,
    });
  }
  return noteView(threadId, r.note);
}

/** Appends the note to the agent's memory when the route's policy opts in and its agent keeps one. */
async function rememberNote(env: Env, settings: Settings, route: Route, threadId: string, text: string): Promise<void> {
  if (route.target_kind !== "agent") return;
  const policy = await inboxPolicyFor(env, route.route_name);
  if (!policy.notes_in_agent_memory) return;
  const ctx = createTargetContext(env, settings);
  if (!(await agentKeepsMemory(ctx, route.target_name))) return;
  await appendAgentMemory(ctx, route.target_name, threadId, { role: "system", content: noteMemoryText(text) });
}

/** Deletes note `noteId`: its author, or an admin. 404 unknown or expired, 403 another's. */
export async function deleteNote(env: Env, threadId: string, noteId: string, by: string, admin: boolean): Promise<z.infer<typeof noteDeleted>> {
  const r = await threadStub(env, threadId).noteDelete(noteId, by, admin);
  if (!r.ok) {
    if (r.reason === "not_author") throw new HttpError(403, "only the note's author or an admin may delete it", "not_note_author");
    throw new HttpError(404, "note not found");
  }
  return { thread_id: threadId, note_id: noteId, deleted: true };
}
