/**
 * The markdown subset (src/shared/markdown.ts) as DOM nodes, for the chat page, the widget and the
 * console (docs/web-channel-client.md "Formatting"). Built with createElement and text nodes only,
 * never markup, so no Trusted Types policy is needed and nothing in a message can become script:
 * the elements are p, br, strong, em, s, code, pre, ul, ol, li, blockquote and a, and an `a` gets
 * only the parsed https `href`, `target="_blank"` and `rel="noopener noreferrer"`.
 *
 * Answers and operator messages are rendered this way; a visitor's own message stays plain text
 * (what they typed is shown as typed, asterisks included). The console parses its own texts
 * (`markdownText` there); the chat page and the widget get the parse from the service.
 */
import type { MdBlock, MdInline, MdList } from "../../src/shared/markdown";

/**
 * `blocks` (the service's parse of a text, sent with the entry or draft as `md`) as a `div` of class
 * `className`. The page does not parse: the service already did, once, and the page only builds
 * nodes. The blocks are still taken as untrusted shapes: an unknown node is skipped, text goes in
 * as text nodes, and a link keeps only an https `href` that `new URL` accepts.
 */
export function markdownBlock(doc: Document, blocks: unknown, className: string): HTMLDivElement {
  const box = doc.createElement("div");
  box.className = className;
  for (const b of arr<MdBlock>(blocks)) {
    const node = block(doc, b);
    if (node) box.append(node);
  }
  return box;
}

/** A text shown as one plain paragraph (an entry the service sent no blocks for). */
export function plainBlock(doc: Document, text: string, className: string): HTMLDivElement {
  return markdownBlock(doc, [{ type: "paragraph", children: [{ type: "text", text }] }], className);
}

const arr = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

function safeHref(href: unknown): string | null {
  if (typeof href !== "string" || !/^https:\/\//i.test(href)) return null;
  try {
    const u = new URL(href);
    return u.protocol === "https:" ? u.href : null;
  } catch {
    return null;
  }
}

function block(doc: Document, b: MdBlock): HTMLElement | null {
  switch (b?.type) {
    case "paragraph":
      return inline(doc, doc.createElement("p"), b.children);
    case "code": {
      const pre = doc.createElement("pre");
      const code = doc.createElement("code");
      code.append(doc.createTextNode(str(b.text)));
      pre.append(code);
      return pre;
    }
    case "list":
      return list(doc, b);
    case "quote": {
      const q = doc.createElement("blockquote");
      for (const c of arr<MdBlock>(b.children)) {
        const node = c?.type === "quote" ? null : block(doc, c);
        if (node) q.append(node);
      }
      return q;
    }
    default:
      return null;
  }
}

function list(doc: Document, l: MdList, nested = false): HTMLElement {
  const el = doc.createElement(l.ordered ? "ol" : "ul");
  if (l.ordered && Number.isSafeInteger(l.start) && l.start !== 1) el.setAttribute("start", String(l.start));
  for (const item of arr<MdList["items"][number]>(l.items)) {
    const li = inline(doc, doc.createElement("li"), item?.children);
    if (item?.list && !nested) li.append(list(doc, item.list, true));
    el.append(li);
  }
  return el;
}

function inline<E extends HTMLElement>(doc: Document, parent: E, nodes: unknown, depth = 0): E {
  for (const n of arr<MdInline>(nodes)) {
    switch (n?.type) {
      case "text":
        parent.append(doc.createTextNode(str(n.text)));
        break;
      case "break":
        parent.append(doc.createElement("br"));
        break;
      case "code": {
        const code = doc.createElement("code");
        code.append(doc.createTextNode(str(n.text)));
        parent.append(code);
        break;
      }
      case "strong":
      case "em":
      case "strike":
        if (depth < 8) parent.append(inline(doc, doc.createElement(n.type === "strike" ? "s" : n.type), n.children, depth + 1));
        break;
      case "link": {
        const href = safeHref(n.href);
        if (!href) {
          inline(doc, parent, n.children, depth + 1);
          break;
        }
        const a = doc.createElement("a");
        a.setAttribute("href", href);
        a.setAttribute("target", "_blank");
        a.setAttribute("rel", "noopener noreferrer");
        parent.append(inline(doc, a, n.children, depth + 1));
        break;
      }
    }
  }
  return parent;
}
