/**
 * A thread's private notes (docs/inbox.md "Private notes"): what operators write for each other,
 * never sent to the customer. Lists them oldest first with author and time, adds one, and deletes
 * one's own (an admin any). Each part is shown only when `me` lists its door. Set apart from the
 * transcript by its look and its words, so nobody takes a note for a message the customer saw.
 * A refresh that changes nothing leaves the list as it is, so the focus is never stolen.
 */
import { ApiError, call, path } from "../api";
import { DOORS } from "../doors";
import { field, fill, focus, h } from "../dom";
import { can, currentMe } from "../session";
import { announce, busy, errorBox, when } from "../ui";

interface Note {
  note_id: string;
  by: string;
  text: string;
  created_at: string;
}

/** A note's longest text (the door's own limit). */
const MAX_NOTE_CHARS = 4000;

export class NotesPanel {
  readonly el = h("section", { class: "notes", "aria-labelledby": "notes-title" });
  private route = "";
  private threadId = "";
  private shown = "";
  private readonly list = h("ol", { class: "note-list", "aria-label": "Private notes" });
  private readonly err = errorBox();
  private readonly text = h("textarea", { name: "note", rows: 1, maxlength: MAX_NOTE_CHARS });
  private readonly form: HTMLFormElement | null;

  constructor() {
    if (!can(DOORS.noteAdd)) {
      this.form = null;
      return;
    }
    const submit = h("button", { type: "submit" }, "Add note");
    this.form = h("form", { class: "inline note-form", "aria-label": "Add a private note" }, field("Private note", this.text), submit);
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      const route = this.route;
      const threadId = this.threadId;
      const text = this.text.value.trim();
      if (!text) {
        this.err.show(new Error("Write the note first."));
        return;
      }
      void busy(submit, this.err, async () => {
        // 409 notes_full keeps the text in the box; the error says to delete one first.
        await call("POST", path(DOORS.noteAdd[1], { route_name: route }), { body: { thread_id: threadId, text } });
        this.text.value = "";
        announce("Private note added.");
        await this.load(route, threadId);
        focus(this.text);
      });
    });
  }

  /** Shows nothing until the next `load` (another thread is opening). */
  clear(): void {
    this.route = "";
    this.threadId = "";
    fill(this.el);
  }

  /** Reads the thread's notes; shows nothing for a key that may not, or a thread with no record. */
  async load(route: string, threadId: string): Promise<void> {
    if (route !== this.route || threadId !== this.threadId) {
      this.route = route;
      this.threadId = threadId;
      this.shown = "";
      this.text.value = "";
      this.err.clear();
      fill(this.el);
    }
    if (!can(DOORS.notes)) return;
    let notes: Note[];
    try {
      notes = (await call<{ notes: Note[] }>("GET", path(DOORS.notes[1], { route_name: route }), { query: { thread_id: threadId } })).notes;
    } catch (e) {
      if (route !== this.route || threadId !== this.threadId) return;
      // A thread that holds no record yet has no notes and takes none.
      if (e instanceof ApiError && e.status === 404) {
        fill(this.el);
        this.shown = "";
        return;
      }
      this.frame();
      this.err.show(e);
      return;
    }
    if (route !== this.route || threadId !== this.threadId) return;
    this.frame();
    const signature = JSON.stringify(notes.map((n) => n.note_id));
    if (signature === this.shown) return;
    this.shown = signature;
    fill(this.list, notes.length ? notes.map((n) => this.item(n)) : h("li", { class: "muted" }, "No notes."));
  }

  /** The heading, list and form, put in once per thread (the form keeps what is being typed). */
  private frame(): void {
    if (this.el.firstChild) return;
    fill(
      this.el,
      h(
        "div",
        { class: "notes-head" },
        h("h3", { id: "notes-title" }, "Private notes"),
        h("p", { class: "private-mark" }, "private: never sent to the customer"),
      ),
      this.list,
      this.form,
      this.err.el,
    );
  }

  private item(n: Note): HTMLElement {
    const me = currentMe();
    const mayDelete = can(DOORS.noteDelete) && (n.by === me?.user_id || !!me?.admin);
    const del = mayDelete ? h("button", { type: "button", class: "danger" }, "Delete note") : null;
    del?.addEventListener("click", () => {
      const route = this.route;
      const threadId = this.threadId;
      void busy(del, this.err, async () => {
        await call("DELETE", path(DOORS.noteDelete[1], { route_name: route, note_id: n.note_id }), { query: { thread_id: threadId } });
        announce("Private note deleted.");
        await this.load(route, threadId);
        focus(this.el.querySelector<HTMLElement>("#notes-title"));
      });
    });
    return h(
      "li",
      { class: "note", "data-note-id": n.note_id },
      h("p", { class: "note-meta" }, "Note by ", h("strong", null, n.by), " · ", when(n.created_at), " ", del),
      h("p", { class: "text" }, n.text),
    );
  }
}
