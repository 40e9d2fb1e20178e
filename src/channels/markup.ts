/**
 * Answers and operator messages are written in the markdown subset of src/shared/markdown.ts; each
 * channel gets it in its provider's own markup (docs/channels.md "Formatting"). Pure.
 *
 * - `telegram-html`: Bot API `parse_mode: "HTML"` (safer than MarkdownV2, whose eighteen reserved
 *   characters must each be escaped everywhere): `<b> <i> <s> <code> <pre> <a href> <blockquote>`,
 *   with `&`, `<`, `>` (and `"` in the one attribute) escaped everywhere else. The output respects
 *   Telegram's nesting rules, so it never depends on the provider repairing it: code is never
 *   inside another entity (inside one it is plain text), and a quote holds no code and no link (a
 *   link there is `text (url)`).
 * - `slack-mrkdwn`: `*bold*`, `_italic_`, `~strike~`, `` `code` ``, ```` ```block``` ````, `<url|text>`,
 *   `>` quotes; `&`, `<`, `>` escaped, so no text becomes a mention or a link of its own.
 * - `whatsapp`: `*bold*`, `_italic_`, `~strike~`, ```` ```mono``` ````, `>` quotes; links as
 *   `text (url)`. WhatsApp has no escape, so a literal marker in the text stays as written.
 * - `plain` (SMS): the markers removed, links as `text (url)`, bullets `-` and quotes `>` so the
 *   message stays in the GSM alphabet where the text is (a `•` would make every segment UCS-2).
 *
 * Every format keeps all the text; only the markers change. Lists are one line per item (`•`, or
 * the number), a nested item indented under its parent; blocks are separated by a blank line.
 */
import { type MdBlock, type MdInline, type MdList, httpsHref, inlineText, openFenceAfter, parseMarkdown } from "../shared/markdown";
import { planChunks } from "./chunking";

export type Markup = "telegram-html" | "slack-mrkdwn" | "whatsapp" | "plain";

/**
 * `markdown` in `markup`: the text to send, the length the provider counts against its message
 * cap, and whether the provider would see nothing in it (an empty code block, say).
 */
export type Formatted = { text: string; length: number; blank: boolean };

const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/** `markdown` formatted for a channel of `markup`. */
export function formatMarkdown(markup: Markup, markdown: string): Formatted {
  const blocks = parseMarkdown(markdown);
  const style = STYLES[markup];
  const text = renderBlocks(style, blocks, { inQuote: false });
  const shown = markup === "telegram-html" ? telegramVisible(text) : text;
  return { text, length: codePoints(shown), blank: shown.trim() === "" };
}

/** One planned message: the markdown it was cut from and what is sent. */
export type FormattedChunk = { markdown: string; text: string };

/**
 * The messages `markdown` is sent as on a channel of `markup` (null: as written). The written text
 * is cut as planChunks cuts it (at a newline or a space where it can), a code block cut in two is
 * reopened at the start of the next chunk, and each chunk is formatted on its own, so every message
 * is well-formed markup by itself; blank chunks are dropped (some providers refuse them). Where
 * formatting makes a chunk longer than `maxChars` as the provider counts it, the text is cut
 * narrower and formatted again, a bounded number of times. Deterministic, so a re-driven delivery
 * plans the same messages.
 */
export function planFormatted(
  markup: Markup | null,
  markdown: string,
  maxChars: number,
  maxChunks: number,
): { ok: true; chunks: FormattedChunk[] } | { ok: false; reason: "too_long" } {
  let width = maxChars;
  for (let round = 0; round < 8 && width >= 1; round++) {
    const plan = planChunks(markdown, width, maxChunks);
    if (!plan.ok) return plan;
    const chunks: FormattedChunk[] = [];
    let longest = 0;
    let fence: string | null = null;
    for (const cut of plan.chunks) {
      if (!markup) {
        if (cut.trim() !== "") chunks.push({ markdown: cut, text: cut });
        continue;
      }
      const md = fence ? `${fence}\n${cut}` : cut;
      fence = openFenceAfter(md);
      if (md.trim() === "") continue;
      const f = formatMarkdown(markup, md);
      if (f.blank) continue;
      // The separators the cut left at the chunk's edges stay, so a plain text's chunks still
      // concatenate to the text.
      let from = 0;
      let to = cut.length;
      while (from < to && isEdgeSpace(cut[from])) from++;
      while (to > from && isEdgeSpace(cut[to - 1])) to--;
      const lead = cut.slice(0, from);
      const trail = cut.slice(to);
      longest = Math.max(longest, f.length + codePoints(lead) + codePoints(trail));
      chunks.push({ markdown: md, text: `${lead}${f.text}${trail}` });
    }
    if (longest <= maxChars) return { ok: true, chunks };
    width = Math.min(width - 1, Math.floor((width * maxChars) / longest));
  }
  return { ok: false, reason: "too_long" };
}

/** The text Telegram shows for our HTML (the tags gone, the four entities decoded): what its cap counts. */
function telegramVisible(html: string): string {
  return html.replace(/<[^>]*>/g, "").replace(/&(lt|gt|quot|amp);/g, (_, e: string) => ({ lt: "<", gt: ">", quot: '"', amp: "&" })[e] ?? "");
}

type Ctx = { inQuote: boolean };
/** Where an inline node sits: inside a quote; inside a formatting entity or a link (Telegram's code rule). */
type InlineCtx = { inQuote: boolean; inEntity: boolean };

type Style = {
  text(s: string): string;
  strong(inner: string): string;
  em(inner: string): string;
  strike(inner: string): string;
  code(text: string, at: InlineCtx): string;
  link(href: string, children: MdInline[], at: InlineCtx): string;
  codeBlock(lang: string, text: string, at: Ctx): string;
  quote(inner: string): string;
  bullet: string;
  nestedBullet: string;
};

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function escapeSlack(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** `text (url)`, or the text alone when it is that very URL (a bare link, as it was written). */
function spelledLink(text: string, href: string): string {
  return httpsHref(text) === href ? text : `${text} (${href})`;
}

const isEdgeSpace = (c: string) => c === " " || c === "\t" || c === "\n" || c === "\r";

/** Markers around a run, kept inside its edge spaces: the providers need them against the text. */
function framed(open: string, inner: string, close = open): string {
  let start = 0;
  let end = inner.length;
  while (start < end && isEdgeSpace(inner[start])) start++;
  while (end > start && isEdgeSpace(inner[end - 1])) end--;
  if (start === end) return inner;
  return `${inner.slice(0, start)}${open}${inner.slice(start, end)}${close}${inner.slice(end)}`;
}

const TELEGRAM: Style = {
  text: escapeHtml,
  strong: (inner) => `<b>${inner}</b>`,
  em: (inner) => `<i>${inner}</i>`,
  strike: (inner) => `<s>${inner}</s>`,
  code: (text, at) => (at.inEntity || at.inQuote ? escapeHtml(text) : `<code>${escapeHtml(text)}</code>`),
  link: (href, children, at) =>
    at.inQuote
      ? escapeHtml(spelledLink(inlineText(children), href))
      : `<a href="${escapeHtml(href)}">${renderInline(TELEGRAM, children, { inQuote: false, inEntity: true })}</a>`,
  codeBlock: (lang, text, at) =>
    at.inQuote
      ? escapeHtml(text)
      : lang
        ? `<pre><code class="language-${escapeHtml(lang)}">${escapeHtml(text)}</code></pre>`
        : `<pre>${escapeHtml(text)}</pre>`,
  quote: (inner) => `<blockquote>${inner}</blockquote>`,
  bullet: "•",
  nestedBullet: "◦",
};

const SLACK: Style = {
  text: escapeSlack,
  strong: (inner) => framed("*", inner),
  em: (inner) => framed("_", inner),
  strike: (inner) => framed("~", inner),
  // A backtick inside would end the code early; Slack has no escape for it.
  code: (text) => framed("`", escapeSlack(text.replace(/`/g, "ˋ"))),
  link: (href, children) => {
    const label = inlineText(children).replace(/\s+/g, " ").trim();
    const url = escapeSlack(href).replace(/\|/g, "%7C");
    return label === href ? `<${url}>` : `<${url}|${escapeSlack(label)}>`;
  },
  codeBlock: (_lang, text) => `\`\`\`\n${escapeSlack(text.replace(/```/g, "ˋˋˋ"))}\n\`\`\``,
  quote: (inner) => prefixLines("> ", inner),
  bullet: "•",
  nestedBullet: "◦",
};

const WHATSAPP: Style = {
  text: (s) => s,
  strong: (inner) => framed("*", inner),
  em: (inner) => framed("_", inner),
  strike: (inner) => framed("~", inner),
  code: (text) => framed("```", text),
  link: (href, children) => spelledLink(inlineText(children), href),
  codeBlock: (_lang, text) => `\`\`\`${text}\`\`\``,
  quote: (inner) => prefixLines("> ", inner),
  bullet: "•",
  nestedBullet: "◦",
};

const PLAIN: Style = {
  text: (s) => s,
  strong: (inner) => inner,
  em: (inner) => inner,
  strike: (inner) => inner,
  code: (text) => text,
  link: (href, children) => spelledLink(inlineText(children), href),
  codeBlock: (_lang, text) => text,
  quote: (inner) => prefixLines("> ", inner),
  bullet: "-",
  nestedBullet: "-",
};

const STYLES: Record<Markup, Style> = { "telegram-html": TELEGRAM, "slack-mrkdwn": SLACK, whatsapp: WHATSAPP, plain: PLAIN };

function prefixLines(prefix: string, text: string): string {
  return text
    .split("\n")
    .map((l) => prefix + l)
    .join("\n");
}

function renderInline(style: Style, nodes: readonly MdInline[], at: InlineCtx): string {
  let out = "";
  const inner: InlineCtx = { inQuote: at.inQuote, inEntity: true };
  for (const n of nodes) {
    switch (n.type) {
      case "text":
        out += style.text(n.text);
        break;
      case "break":
        out += "\n";
        break;
      case "code":
        out += style.code(n.text, at);
        break;
      case "strong":
        out += style.strong(renderInline(style, n.children, inner));
        break;
      case "em":
        out += style.em(renderInline(style, n.children, inner));
        break;
      case "strike":
        out += style.strike(renderInline(style, n.children, inner));
        break;
      case "link":
        out += style.link(n.href, n.children, at);
        break;
    }
  }
  return out;
}

function renderList(style: Style, list: MdList, at: Ctx, nested: boolean): string {
  const lines: string[] = [];
  const inline: InlineCtx = { inQuote: at.inQuote, inEntity: false };
  list.items.forEach((item, k) => {
    const mark = list.ordered ? `${list.start + k}.` : nested ? style.nestedBullet : style.bullet;
    const indent = nested ? "    " : "";
    const text = renderInline(style, item.children, inline).replace(/\n/g, `\n${indent}  `);
    lines.push(`${indent}${mark} ${text}`);
    if (item.list) lines.push(renderList(style, item.list, at, true));
  });
  return lines.join("\n");
}

function renderBlocks(style: Style, blocks: readonly MdBlock[], at: Ctx): string {
  const parts: string[] = [];
  for (const b of blocks) {
    switch (b.type) {
      case "paragraph":
        parts.push(renderInline(style, b.children, { inQuote: at.inQuote, inEntity: false }));
        break;
      case "code":
        parts.push(style.codeBlock(b.lang, b.text, at));
        break;
      case "list":
        parts.push(renderList(style, b, at, false));
        break;
      case "quote":
        parts.push(style.quote(renderBlocks(style, b.children, { inQuote: true })));
        break;
    }
  }
  return parts.join("\n\n");
}
