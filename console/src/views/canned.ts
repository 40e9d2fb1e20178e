/**
 * Canned responses in the reply box (docs/inbox.md "Canned responses"): typing `/` at the start of a
 * word opens a list of the saved replies whose shortcode starts with what follows
 * (`GET /api/inbox/canned-responses?q=`); ↑/↓ move, Enter or Tab inserts, Escape closes. The chosen
 * one is rendered for the thread (`POST …/{shortcode}/render`) and replaces the `/word`; the
 * operator edits it and sends it as usual, so nothing reaches the customer before that.
 */
import { call, messageOf, path } from "../api";
import { DOORS } from "../doors";
import { fill, h, uid } from "../dom";
import { announce } from "../ui";

interface Canned {
  shortcode: string;
  title: string;
}

/** The `/word` just before the caret: where it starts and what follows the slash. */
function slashWord(text: string, caret: number): { start: number; q: string } | null {
  const m = /(^|\s)\/([a-z0-9_-]{0,32})$/.exec(text.slice(0, caret));
  return m ? { start: caret - m[2].length - 1, q: m[2] } : null;
}

const SHOWN = 8;

/**
 * Wires the picker to `text`; answers the list to place after it. `thread()` names the thread the
 * reply is for (the render fills the template from it).
 */
export function cannedPicker(text: HTMLTextAreaElement, thread: () => { route: string; threadId: string }): HTMLElement {
  const list = h("ul", { class: "canned", role: "listbox", id: uid("canned"), "aria-label": "Canned responses", hidden: true });
  const note = h("p", { class: "muted canned-note", hidden: true });
  let items: Canned[] = [];
  let active = 0;
  let word: { start: number; q: string } | null = null;
  let asked = 0;
  let timer: number | undefined;
  text.setAttribute("aria-controls", list.id);
  text.setAttribute("aria-autocomplete", "list");

  const close = () => {
    word = null;
    items = [];
    list.hidden = true;
    note.hidden = true;
    text.removeAttribute("aria-activedescendant");
  };

  const paint = () => {
    fill(
      list,
      items.map((c, i) => {
        const li = h(
          "li",
          { role: "option", id: `${list.id}-${i}`, "aria-selected": i === active ? "true" : "false", "data-shortcode": c.shortcode },
          h("span", { class: "name" }, `/${c.shortcode}`),
          " ",
          h("span", { class: "muted" }, c.title),
        );
        // Keep the focus in the reply box: choose on mousedown, before the textarea would blur.
        li.addEventListener("mousedown", (e) => {
          e.preventDefault();
          void choose(c.shortcode);
        });
        return li;
      }),
    );
    list.hidden = items.length === 0;
    if (items.length) text.setAttribute("aria-activedescendant", `${list.id}-${active}`);
    else text.removeAttribute("aria-activedescendant");
  };

  const lookup = async (q: string) => {
    const n = ++asked;
    try {
      const got = await call<{ items: Canned[] }>("GET", DOORS.canned[1], { query: { q, pageSize: SHOWN } });
      if (n !== asked || !word) return;
      items = got.items;
      active = 0;
      paint();
      note.hidden = items.length > 0;
      note.textContent = items.length ? "" : `No canned response starts with /${q}.`;
    } catch (e) {
      if (n !== asked) return;
      items = [];
      paint();
      note.hidden = false;
      note.textContent = `Canned responses: ${messageOf(e)}`;
    }
  };

  const choose = async (shortcode: string) => {
    const at = word;
    const { route, threadId } = thread();
    close();
    if (!at) return;
    try {
      const got = await call<{ text: string }>("POST", path(DOORS.cannedRender[1], { shortcode }), { body: { route_name: route, thread_id: threadId } });
      const end = at.start + 1 + at.q.length;
      text.setRangeText(got.text, at.start, end, "end");
      text.focus();
      announce(`Inserted /${shortcode}.`);
    } catch (e) {
      note.hidden = false;
      note.textContent = `Canned response /${shortcode}: ${messageOf(e)}`;
    }
  };

  const update = () => {
    if (text.selectionStart !== text.selectionEnd) return close();
    const w = slashWord(text.value, text.selectionStart);
    if (!w) return close();
    word = w;
    clearTimeout(timer);
    timer = window.setTimeout(() => void lookup(w.q), 120);
  };

  text.addEventListener("input", update);
  text.addEventListener("click", update);
  text.addEventListener("blur", () => window.setTimeout(close, 150));
  text.addEventListener("keydown", (e) => {
    if (!word || list.hidden) {
      if (e.key === "Escape" && word) close();
      return;
    }
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      active = (active + (e.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      paint();
    } else if (e.key === "Enter" || e.key === "Tab") {
      e.preventDefault();
      const c = items[active];
      if (c) void choose(c.shortcode);
    } else if (e.key === "Escape") {
      e.preventDefault();
      close();
    }
  });
  return h("div", { class: "canned-box" }, list, note);
}
