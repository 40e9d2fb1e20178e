/**
 * The markdown subset (src/shared/markdown.ts) as DOM nodes, for the chat page, the widget and the
 * console (docs/web-channel-client.md "Formatting"). Built with createElement and text nodes only,
 * never markup, so no Trusted Types policy is needed and nothing in a message can become script:
 * the elements are p, br, strong, em, s, code, pre, ul, ol, li, blockquote and a, and an `a` gets
 * only the parsed https `href`, `target="_blank"` and `rel="noopener noreferrer"`.
 *
 * Answers and operator messages are rendered this way; a visitor's own message stays plain text
 * (what they typed is shown as typed, asterisks included).
 */
import { type MdBlock, type MdInline, type MdList, parseMarkdown } from "../../src/shared/markdown";

/** `text` as markdown: a `div` of class `className` holding its blocks. */
export function markdownBlock(doc: Document, text: string, className: string): HTMLDivElement {
  const box = doc.createElement("div");
  box.className = className;
  for (const b of parseMarkdown(text)) box.append(block(doc, b));
  return box;
}

function block(doc: Document, b: MdBlock): HTMLElement {
  switch (b.type) {
    case "paragraph":
      return inline(doc, doc.createElement("p"), b.children);
    case "code": {
      const pre = doc.createElement("pre");
      const code = doc.createElement("code");
      code.append(doc.createTextNode(b.text));
      pre.append(code);
      return pre;
    }
    case "list":
      return list(doc, b);
    case "quote": {
      const q = doc.createElement("blockquote");
      for (const c of b.children) q.append(block(doc, c));
      return q;
    }
  }
}

function list(doc: Document, l: MdList): HTMLElement {
  const el = doc.createElement(l.ordered ? "ol" : "ul");
  if (l.ordered && l.start !== 1) el.setAttribute("start", String(l.start));
  for (const item of l.items) {
    const li = inline(doc, doc.createElement("li"), item.children);
    if (item.list) li.append(list(doc, item.list));
    el.append(li);
  }
  return el;
}

function inline<E extends HTMLElement>(doc: Document, parent: E, nodes: readonly MdInline[]): E {
  for (const n of nodes) {
    switch (n.type) {
      case "text":
        parent.append(doc.createTextNode(n.text));
        break;
      case "break":
        parent.append(doc.createElement("br"));
        break;
      case "code": {
        const code = doc.createElement("code");
        code.append(doc.createTextNode(n.text));
        parent.append(code);
        break;
      }
      case "strong":
        parent.append(inline(doc, doc.createElement("strong"), n.children));
        break;
      case "em":
        parent.append(inline(doc, doc.createElement("em"), n.children));
        break;
      case "strike":
        parent.append(inline(doc, doc.createElement("s"), n.children));
        break;
      case "link": {
        const a = doc.createElement("a");
        a.setAttribute("href", n.href);
        a.setAttribute("target", "_blank");
        a.setAttribute("rel", "noopener noreferrer");
        parent.append(inline(doc, a, n.children));
        break;
      }
    }
  }
  return parent;
}
