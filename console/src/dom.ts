/**
 * A tiny element builder. Text always goes in as text nodes (never HTML), so nothing the API
 * answers can become markup: with the strict CSP, that is the console's XSS defence.
 */
export type Child = Node | string | number | null | undefined | false | Child[];
type AttrValue = string | number | boolean | null | undefined;
export type Attrs = { [name: string]: AttrValue | ((e: Event) => void) };

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (typeof value === "function") el.addEventListener(name.slice(2).toLowerCase(), value as EventListener);
    else if (value === true) el.setAttribute(name, "");
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(parent, c);
    else parent.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces `el`'s children. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

let ids = 0;
/** A fresh element id (labels point at their controls by id). */
export function uid(prefix: string): string {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A labelled control: `<label for>` + the control, wrapped in a field. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  if (!control.id) control.id = uid("f");
  const hintEl = hint ? h("small", { id: `${control.id}-hint`, class: "hint" }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

/** A `<select>` of `options` ([value, label]). */
export function select(name: string, options: Array<[string, string]>, value = ""): HTMLSelectElement {
  const s = h("select", { name }, ...options.map(([v, l]) => h("option", { value: v }, l)));
  s.value = value;
  return s;
}

/** Moves focus to `el` (headings get tabindex -1 so screen readers land on the new view). */
export function focus(el: HTMLElement | null): void {
  if (!el) return;
  if (!el.hasAttribute("tabindex") && !/^(A|BUTTON|INPUT|SELECT|TEXTAREA)$/.test(el.tagName)) el.setAttribute("tabindex", "-1");
  el.focus();
}
