/**
 * The private-note doors on one route's threads (docs/inbox.md, "Private notes"): write a note,
 * read the thread's notes, delete one. They apply the thread-belongs-to-route guard of the mode
 * doors and the "mine only" check of the inbox doors; the thread's object keeps the notes.
 */
import { Hono } from "hono";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import { NoteView } from "../model/notes";
import { routeParams } from "../model/schemas";
import { assertThreadAllowed } from "../operator/inbox";
import { addNote, deleteNote, listNotes, noteBody, noteDeleted, noteParams, notesAnswer } from "../operator/notes";
import { threadIdQuery } from "../operator/schemas";
import { guardThreadOnRoute } from "../operator/thread-guard";
import { requireRoute } from "../store";

export const conversationNotesRouter = new Hono<AppEnv>();

const common = { area: "conversations", auth: { tag: "conversations" }, store: "conversations" } as const;

addRoute(
  conversationNotesRouter,
  {
    ...common,
    method: "post",
    path: "/api/conversations/{route_name}/thread/notes",
    summary: "Write a private note on a thread",
    description:
      "A note operators write for each other: it is never delivered to the customer, and joins the agent's memory (as a system message) only when the route's inbox policy sets `notes_in_agent_memory` and its target is an agent that keeps memory. `text` is 1 to 4000 characters, trimmed. Answers 201 with the note. A thread keeps at most 200 live notes (409 `notes_full`); each expires `CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS` after its write. 404 when the thread holds no record; 503 `agent_memory_unavailable` when the memory append failed (the note is not kept).",
    params: routeParams,
    body: noteBody,
    response: NoteView,
    status: 201,
    errors: [404, 409, 503],
  },
  async (c, { params, body, principal }) => {
    const route = await requireRoute(c.env.DB, params.route_name);
    const thread = await guardThreadOnRoute(c.env, route.route_name, body.thread_id, route);
    await assertThreadAllowed(c.env, principal, route.route_name, thread.thread_id);
    return addNote(c.env, c.get("settings"), route, thread.thread_id, principal.key.user_id, body.text);
  },
);

addRoute(
  conversationNotesRouter,
  {
    ...common,
    method: "get",
    path: "/api/conversations/{route_name}/thread/notes",
    summary: "A thread's private notes, oldest first",
    description: "Every live note of the thread (at most 200), oldest first. 404 when the thread holds no record.",
    params: routeParams,
    query: threadIdQuery,
    response: notesAnswer,
    errors: [404],
  },
  async (c, { params, query, principal }) => {
    const route = await requireRoute(c.env.DB, params.route_name);
    const thread = await guardThreadOnRoute(c.env, route.route_name, query.thread_id, route);
    await assertThreadAllowed(c.env, principal, route.route_name, thread.thread_id);
    return { thread_id: thread.thread_id, notes: await listNotes(c.env, thread.thread_id) };
  },
);

addRoute(
  conversationNotesRouter,
  {
    ...common,
    method: "delete",
    path: "/api/conversations/{route_name}/thread/notes/{note_id}",
    summary: "Delete a private note",
    description:
      "Only the note's author (the key's user_id that wrote it) or an admin deletes it: 403 `not_note_author` otherwise. 404 for a note the thread does not hold (or no longer: it expired). A note already in the agent's memory stays there until that memory is forgotten or expires.",
    params: noteParams,
    query: threadIdQuery,
    response: noteDeleted,
    errors: [403, 404],
  },
  async (c, { params, query, principal }) => {
    const route = await requireRoute(c.env.DB, params.route_name);
    const thread = await guardThreadOnRoute(c.env, route.route_name, query.thread_id, route);
    await assertThreadAllowed(c.env, principal, route.route_name, thread.thread_id);
    return deleteNote(c.env, thread.thread_id, params.note_id, principal.key.user_id, principal.admin);
  },
);
