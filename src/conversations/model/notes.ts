/**
 * Private notes (docs/inbox.md, "Private notes"): what operators write on a thread for each other.
 * A note is never delivered to the customer; it joins the agent's memory only when the route's
 * inbox policy says so. The thread object keeps them beside the records and they expire a
 * retention window after their write.
 */
import { z } from "zod";

/** Longest note, in characters (UTF-16 units, as the rest of the API counts them). */
export const MAX_NOTE_CHARS = 4000;

/** Most live notes one thread keeps; a write past it is refused (409 `notes_full`). */
export const MAX_NOTES_PER_THREAD = 200;

/** A stored note as the thread object hands it out (instants are epoch ms). */
export interface StoredNote {
  id: string;
  by: string;
  text: string;
  created_at: number;
  expires_at: number;
}

/** A note as the doors answer it (ISO instants). */
export const NoteView = z.object({
  note_id: z.string(),
  thread_id: z.string(),
  /** The user_id of the key that wrote it. */
  by: z.string(),
  text: z.string(),
  created_at: z.string(),
  /** When it goes (its write plus the answer retention). */
  expires_at: z.string(),
});
export type NoteView = z.infer<typeof NoteView>;

export function noteView(threadId: string, n: StoredNote): NoteView {
  return {
    note_id: n.id,
    thread_id: threadId,
    by: n.by,
    text: n.text,
    created_at: new Date(n.created_at).toISOString(),
    expires_at: new Date(n.expires_at).toISOString(),
  };
}

/** What a note write answers: the note, or why nothing was written. */
export type NoteAddResult = { ok: true; note: StoredNote } | { ok: false; reason: "no_thread" | "full" };

/** What a note delete answers: done, or why nothing was deleted. */
export type NoteDeleteResult = { ok: true } | { ok: false; reason: "not_found" } | { ok: false; reason: "not_author"; by: string };
