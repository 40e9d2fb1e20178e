/**
 * The markdown subset answers and operator messages are written in (docs/web-channel-client.md
 * "Formatting", docs/channels.md "Formatting"), parsed into a small tree that each surface renders
 * on its own: the chat page and the console build DOM nodes from it (webchat/src/markdown.ts), the
 * channels their provider's markup (src/channels/markup.ts). Pure: no DOM, no imports, so the
 * Worker, the chat page and the console bundle share it.
 *
 * What it reads: paragraphs (blank-line separated; a single newline is a line break), `**strong**`
 * and `__strong__`, `*em*` and `_em_` (an underscore inside a word is text, so snake_case stays),
 * `~~strike~~`, `` `code` ``, fenced code blocks (```lang), bullet (`-`, `*`, `+`) and ordered
 * (`1.`, `1)`) lists with one level of nesting, `[text](https://…)` links and bare https URLs,
 * `#` headings (a strong paragraph) and `>` quotes (one level). Backslash escapes ASCII punctuation.
 * Everything else, HTML included, is literal text: nothing is ever interpreted as markup, entities
 * are not decoded, and no character of the input is dropped except the markers the subset reads.
 *
 * Links are https only. A destination must start with `https://`, parse with `new URL` as https
 * with a host and no credentials, and is carried re-serialized (`href`); any other link
 * (`javascript:`, `data:`, `http:`, `mailto:`, relative, protocol-relative, obfuscated) stays the
 * literal text it was written as.
 *
 * Bounded on hostile input: beyond MARKDOWN_MAX_CHARS the text is plain paragraphs, unparsed; the
 * block pass is one walk over the lines; the inline pass is one scan plus a delimiter matcher whose
 * every step consumes a delimiter (each bracket's and URL's look-ahead stops where the next one's
 * starts, and code spans find their closer through a precomputed index), so the work is linear in
 * the input. Span nesting is built without recursion and capped at MARKDOWN_MAX_DEPTH when the tree
 * is materialized (deeper markers are kept as text), so no renderer recurses deeper than that.
 *
 * Why our own parser: the kept libraries that produce tokens (marked's lexer, markdown-it,
 * micromark) each add more than the whole chat page bundle (marked's lexer alone is ~15 KiB gzip
 * against the page's ~5 KiB) and parse far more than this subset (raw HTML, reference links,
 * images, tables), all of which would have to be switched off again; the tiny ones (snarkdown and
 * its kin) emit HTML strings, which the pages may not assign, and match with regular expressions.
 */

export type MdInline =
  | { type: "text"; text: string }
  | { type: "break" }
  | { type: "code"; text: string }
  | { type: "strong"; children: MdInline[] }
  | { type: "em"; children: MdInline[] }
  | { type: "strike"; children: MdInline[] }
  /** `href`: an https URL as `new URL` serializes it; the children never hold a link. */
  | { type: "link"; href: string; children: MdInline[] };

/** A list item: its text, and at most one nested list (whose items nest no further). */
export type MdListItem = { children: MdInline[]; list?: MdList };
export type MdList = { type: "list"; ordered: boolean; start: number; items: MdListItem[] };

export type MdBlock =
  | { type: "paragraph"; children: MdInline[] }
  /** `lang`: the fence's language word when it is a plain identifier, else "". */
  | { type: "code"; lang: string; text: string }
  | MdList
  /** A quote's blocks hold no quote. */
  | { type: "quote"; children: MdBlock[] };

/** Longest text parsed as markdown (UTF-16 units); a longer one is shown as plain paragraphs. */
export const MARKDOWN_MAX_CHARS = 16 * 1024;
/** Deepest nesting of strong/em/strike spans; markers nested deeper stay literal text. */
export const MARKDOWN_MAX_DEPTH = 4;
/** Longest link destination or bare URL; a longer one stays text. */
const MAX_URL = 2048;
/** Longest link text between `[` and `]`. */
const MAX_LINK_TEXT = 1000;
/** Span depth a link's own text may use (the link itself sits inside its paragraph's spans). */
const LINK_TEXT_DEPTH = 2;

/** Parses `text` (see the module header). Never throws; an empty or non-string text gives []. */
export function parseMarkdown(text: string): MdBlock[] {
  if (typeof text !== "string" || text === "") return [];
  const lines = text.split(/\r\n|\r|\n/);
  if (text.length > MARKDOWN_MAX_CHARS) return plainBlocks(lines);
  return parseBlocks(lines, true);
}

/** `url` re-serialized when it is an https URL a link may point at (see the header), else null. */
export function httpsHref(url: string): string | null {
  if (url.length > MAX_URL || !/^https:\/\//i.test(url)) return null;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== "https:" || u.hostname === "" || u.username !== "" || u.password !== "") return null;
  return u.href;
}

/**
 * The fence still open at the end of `text` (its opening line, to repeat before the text that
 * continues it), or null. A sender that cuts a long answer into messages uses it so a code block
 * cut in two stays a code block in both.
 */
export function openFenceAfter(text: string): string | null {
  let open: Fence | null = null;
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (open) {
      if (closesFence(line, open)) open = null;
    } else {
      open = fenceOf(line);
    }
  }
  return open ? `${open.marker}${open.lang}` : null;
}

/** The text a run of inline nodes shows, without any formatting (link targets left out). */
export function inlineText(nodes: readonly MdInline[]): string {
  let out = "";
  const stack: MdInline[] = [...nodes].reverse();
  while (stack.length) {
    const n = stack.pop() as MdInline;
    if (n.type === "text" || n.type === "code") out += n.text;
    else if (n.type === "break") out += "\n";
    else for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
  return out;
}

// ---- blocks ----

type Fence = { char: string; length: number; marker: string; lang: string; indent: number };
type ItemLine = { indent: number; ordered: boolean; number: number; content: string };

const isBlank = (line: string) => line.trim() === "";

/** `s` without its trailing spaces and tabs (a loop: a regex anchored at the end rescans long runs). */
function trimEndSpaces(s: string): string {
  let end = s.length;
  while (end > 0 && (s[end - 1] === " " || s[end - 1] === "\t")) end--;
  return s.slice(0, end);
}

function plainBlocks(lines: string[]): MdBlock[] {
  const out: MdBlock[] = [];
  let children: MdInline[] = [];
  for (const line of lines) {
    if (isBlank(line)) {
      if (children.length) out.push({ type: "paragraph", children });
      children = [];
      continue;
    }
    if (children.length) children.push({ type: "break" });
    children.push({ type: "text", text: line });
  }
  if (children.length) out.push({ type: "paragraph", children });
  return out;
}

function leadingSpaces(line: string): number {
  let n = 0;
  while (n < line.length && line[n] === " ") n++;
  return n;
}

function fenceOf(line: string): Fence | null {
  const indent = leadingSpaces(line);
  if (indent > 3) return null;
  const char = line[indent];
  if (char !== "`" && char !== "~") return null;
  let end = indent;
  while (line[end] === char) end++;
  const length = end - indent;
  if (length < 3) return null;
  const info = line.slice(end).trim();
  // A backtick fence's info string has no backtick (```a``` on one line is a code span).
  if (char === "`" && info.includes("`")) return null;
  const word = info.split(/[ \t]/, 1)[0];
  const lang = /^[A-Za-z0-9_+#.-]{1,32}$/.test(word) ? word : "";
  return { char, length, marker: char.repeat(length), lang, indent };
}

function closesFence(line: string, open: Fence): boolean {
  const indent = leadingSpaces(line);
  if (indent > 3) return false;
  let end = indent;
  while (line[end] === open.char) end++;
  return end - indent >= open.length && line.slice(end).trim() === "";
}

/** The heading's text when `line` is an ATX heading (`#` to `######` then a space or nothing). */
function headingOf(line: string): string | null {
  const indent = leadingSpaces(line);
  if (indent > 3) return null;
  let end = indent;
  while (line[end] === "#") end++;
  const level = end - indent;
  if (level < 1 || level > 6) return null;
  if (end < line.length && line[end] !== " " && line[end] !== "\t") return null;
  let text = line.slice(end).trim();
  // A closing run of `#` preceded by a space is not part of the text.
  let cut = text.length;
  while (cut > 0 && text[cut - 1] === "#") cut--;
  if (cut === 0) text = "";
  else if (cut < text.length && (text[cut - 1] === " " || text[cut - 1] === "\t")) text = text.slice(0, cut).trim();
  return text;
}

/** The text after the quote marker when `line` is a quote line. */
function quoteOf(line: string): string | null {
  const indent = leadingSpaces(line);
  if (indent > 3 || line[indent] !== ">") return null;
  return line.slice(line[indent + 1] === " " ? indent + 2 : indent + 1);
}

function itemOf(line: string): ItemLine | null {
  let indent = 0;
  while (indent < line.length && (line[indent] === " " || line[indent] === "\t")) indent += 1;
  const c = line[indent];
  let end: number;
  let ordered = false;
  let number = 1;
  if (c === "-" || c === "*" || c === "+") {
    end = indent + 1;
  } else {
    end = indent;
    while (end < line.length && end - indent < 9 && line[end] >= "0" && line[end] <= "9") end++;
    if (end === indent || (line[end] !== "." && line[end] !== ")")) return null;
    ordered = true;
    number = Number(line.slice(indent, end));
    end += 1;
  }
  if (end < line.length && line[end] !== " " && line[end] !== "\t") return null;
  const content = line.slice(end).trim();
  // `* * *` and `- - -` are thematic breaks in markdown, not items; kept as text.
  if (!ordered && /^[-*+ ]*$/.test(content) && content.includes(c)) return null;
  return { indent, ordered, number, content };
}

/** Whether a line starts a block of its own (and so ends a paragraph or a list item's text). */
function startsBlock(line: string, allowQuote: boolean): boolean {
  return fenceOf(line) !== null || headingOf(line) !== null || (allowQuote && quoteOf(line) !== null);
}

function parseBlocks(lines: string[], allowQuote: boolean): MdBlock[] {
  const out: MdBlock[] = [];
  let para: string[] = [];
  const flush = () => {
    if (para.length) out.push({ type: "paragraph", children: parseInline(para.join("\n"), MARKDOWN_MAX_DEPTH, true) });
    para = [];
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      flush();
      i++;
      continue;
    }
    const fence = fenceOf(line);
    if (fence) {
      flush();
      const body: string[] = [];
      i++;
      while (i < lines.length && !closesFence(lines[i], fence)) {
        const l = lines[i];
        body.push(l.slice(Math.min(fence.indent, leadingSpaces(l))));
        i++;
      }
      i++; // the closing fence (or past the end: an unclosed fence runs to the end)
      out.push({ type: "code", lang: fence.lang, text: body.join("\n") });
      continue;
    }
    const heading = headingOf(line);
    if (heading !== null) {
      flush();
      if (heading) out.push({ type: "paragraph", children: [{ type: "strong", children: parseInline(heading, MARKDOWN_MAX_DEPTH - 1, true) }] });
      i++;
      continue;
    }
    if (allowQuote && quoteOf(line) !== null) {
      flush();
      const inner: string[] = [];
      let q = quoteOf(lines[i]);
      while (q !== null) {
        inner.push(q);
        i++;
        q = i < lines.length ? quoteOf(lines[i]) : null;
      }
      const children = parseBlocks(inner, false);
      if (children.length) out.push({ type: "quote", children });
      continue;
    }
    const item = itemOf(line);
    // A list interrupts a paragraph only with text, and an ordered one only from 1, so a line like
    // "2024. was…" stays text.
    if (item && item.indent <= 3 && (para.length === 0 || (item.content !== "" && (!item.ordered || item.number === 1)))) {
      flush();
      i = readList(lines, i, allowQuote, out);
      continue;
    }
    para.push(line.trim());
    i++;
  }
  flush();
  return out;
}

type OpenItem = { lines: string[]; sub: { ordered: boolean; start: number; items: string[][] } | null };

/** Reads the list starting at `lines[start]` into `out`; answers the index after it. */
function readList(lines: string[], start: number, allowQuote: boolean, out: MdBlock[]): number {
  const first = itemOf(lines[start]) as ItemLine;
  const base = first.indent;
  const items: OpenItem[] = [];
  let i = start;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      // A blank line ends the list unless an item or an indented line of the list follows it.
      let k = i + 1;
      while (k < lines.length && isBlank(lines[k])) k++;
      if (k >= lines.length) break;
      const next = itemOf(lines[k]);
      const continues = next ? next.indent >= base + 2 || next.ordered === first.ordered : leadingSpaces(lines[k]) >= base + 2;
      if (!continues || startsBlock(lines[k], allowQuote)) break;
      i = k;
      continue;
    }
    const item = itemOf(line);
    const last = items[items.length - 1];
    if (item && item.indent >= base + 2 && last) {
      if (!last.sub) last.sub = { ordered: item.ordered, start: item.number, items: [] };
      last.sub.items.push([item.content]);
    } else if (item && item.indent < base + 2) {
      if (item.ordered !== first.ordered) break;
      items.push({ lines: [item.content], sub: null });
    } else if (startsBlock(line, allowQuote)) {
      break;
    } else if (last) {
      // A continuation line belongs to the latest item (nested or not).
      const target = last.sub ? last.sub.items[last.sub.items.length - 1] : last.lines;
      target.push(line.trim());
    } else {
      break;
    }
    i++;
  }
  const depth = MARKDOWN_MAX_DEPTH;
  out.push({
    type: "list",
    ordered: first.ordered,
    start: first.number,
    items: items.map((it): MdListItem => {
      const item: MdListItem = { children: parseInline(it.lines.join("\n"), depth, true) };
      if (it.sub) {
        item.list = {
          type: "list",
          ordered: it.sub.ordered,
          start: it.sub.start,
          items: it.sub.items.map((l) => ({ children: parseInline(l.join("\n"), depth, true) })),
        };
      }
      return item;
    }),
  });
  return i;
}

// ---- inline ----

type DelimChar = "*" | "_" | "~";

/** One entry of the inline list: a finished node, a pending delimiter run, or a span built over entries. */
type Entry = {
  prev: Entry | null;
  next: Entry | null;
  node?: MdInline;
  /** `length`: the run as written; `count`: what is left of it to pair. */
  delim?: { char: DelimChar; length: number; count: number; canOpen: boolean; canClose: boolean; order: number };
  span?: { type: "strong" | "em" | "strike"; marker: string; first: Entry | null };
};

const ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
const WHITESPACE = /\s/u;
const PUNCTUATION = /[\p{P}\p{S}]/u;
const WORD = /[\p{L}\p{N}]/u;
/** Characters a bare URL or a link destination never holds: controls and invisible format characters (bidi overrides, zero-width). */
const URL_STOP = /[\s\p{Cc}\p{Cf}]/u;

/** The code point ending just before `i` ("" at the start). */
function charBefore(s: string, i: number): string {
  if (i <= 0) return "";
  const lo = s.charCodeAt(i - 1);
  if (lo >= 0xdc00 && lo <= 0xdfff && i >= 2) {
    const hi = s.charCodeAt(i - 2);
    if (hi >= 0xd800 && hi <= 0xdbff) return s.slice(i - 2, i);
  }
  return s[i - 1];
}

/** The code point starting at `i` ("" at the end). */
function charAt(s: string, i: number): string {
  if (i >= s.length) return "";
  const cp = s.codePointAt(i) as number;
  return String.fromCodePoint(cp);
}

const isSpace = (c: string) => c === "" || WHITESPACE.test(c);
const isPunct = (c: string) => c !== "" && PUNCTUATION.test(c);

/**
 * Backtick runs of `src`, by length, each as the queue of its positions, so a code span finds its
 * closer without rescanning: positions are only ever taken from a queue's front.
 */
function backtickRuns(src: string): Map<number, { at: number[]; next: number }> {
  const runs = new Map<number, { at: number[]; next: number }>();
  let i = src.indexOf("`");
  while (i >= 0) {
    let end = i;
    while (src[end] === "`") end++;
    const len = end - i;
    let q = runs.get(len);
    if (!q) {
      q = { at: [], next: 0 };
      runs.set(len, q);
    }
    q.at.push(i);
    i = src.indexOf("`", end);
  }
  return runs;
}

/**
 * Parses one paragraph's (or item's, or link text's) inline content. `maxDepth` caps span nesting;
 * `links` is false inside a link's text (a link holds no link, bare or not).
 */
function parseInline(src: string, maxDepth: number, links: boolean): MdInline[] {
  const head: Entry = { prev: null, next: null };
  let tail = head;
  const add = (e: Entry) => {
    e.prev = tail;
    tail.next = e;
    tail = e;
  };
  let text: string[] = [];
  const flushText = () => {
    if (text.length) add({ prev: null, next: null, node: { type: "text", text: text.join("") } });
    text = [];
  };
  const addNode = (node: MdInline) => {
    flushText();
    add({ prev: null, next: null, node });
  };

  const ticks = backtickRuns(src);
  let order = 0;
  let plainFrom = 0;
  let i = 0;
  const n = src.length;
  const keepPlain = (to: number) => {
    if (to > plainFrom) text.push(src.slice(plainFrom, to));
  };
  while (i < n) {
    const c = src[i];
    if (c === "\\") {
      const next = src[i + 1];
      if (next !== undefined && ASCII_PUNCT.includes(next)) {
        keepPlain(i);
        text.push(next);
        i += 2;
        plainFrom = i;
        continue;
      }
      if (next === "\n") {
        keepPlain(i);
        addNode({ type: "break" });
        i += 2;
        while (src[i] === " " || src[i] === "\t") i++;
        plainFrom = i;
        continue;
      }
      i++;
      continue;
    }
    if (c === "\n") {
      keepPlain(i);
      // Trailing spaces before a break are layout, not text.
      if (text.length) text[text.length - 1] = trimEndSpaces(text[text.length - 1]);
      addNode({ type: "break" });
      i++;
      while (src[i] === " " || src[i] === "\t") i++;
      plainFrom = i;
      continue;
    }
    if (c === "`") {
      let end = i;
      while (src[end] === "`") end++;
      const len = end - i;
      const q = ticks.get(len);
      let close = -1;
      if (q) {
        while (q.next < q.at.length && q.at[q.next] <= i) q.next++;
        if (q.next < q.at.length) close = q.at[q.next];
      }
      keepPlain(i);
      if (close < 0) {
        // No closer of this length: the run is text.
        text.push(src.slice(i, end));
      } else {
        let code = src.slice(end, close).replace(/\n/g, " ");
        if (code.length > 2 && code[0] === " " && code[code.length - 1] === " " && code.trim() !== "") code = code.slice(1, -1);
        addNode({ type: "code", text: code });
        end = close + len;
      }
      i = end;
      plainFrom = i;
      continue;
    }
    if (c === "[" && links) {
      const link = linkAt(src, i, maxDepth);
      if (link) {
        keepPlain(i);
        addNode(link.node);
        i = link.end;
        plainFrom = i;
        continue;
      }
      i++;
      continue;
    }
    if ((c === "h" || c === "H") && links && !WORD.test(charBefore(src, i))) {
      const bare = bareUrlAt(src, i);
      if (bare) {
        keepPlain(i);
        if (bare.href) addNode({ type: "link", href: bare.href, children: [{ type: "text", text: bare.text }] });
        else text.push(bare.text);
        i = bare.end;
        plainFrom = i;
        continue;
      }
      i++;
      continue;
    }
    if (c === "*" || c === "_" || c === "~") {
      let end = i;
      while (src[end] === c) end++;
      const count = end - i;
      keepPlain(i);
      plainFrom = end;
      if (c === "~" && count !== 2) {
        text.push(src.slice(i, end));
        i = end;
        continue;
      }
      const before = charBefore(src, i);
      const after = charAt(src, end);
      const left = !isSpace(after) && (!isPunct(after) || isSpace(before) || isPunct(before));
      const right = !isSpace(before) && (!isPunct(before) || isSpace(after) || isPunct(after));
      const canOpen = c === "_" ? left && (!right || isPunct(before)) : left;
      const canClose = c === "_" ? right && (!left || isPunct(after)) : right;
      flushText();
      add({ prev: null, next: null, delim: { char: c, length: count, count, canOpen, canClose, order: order++ } });
      i = end;
      continue;
    }
    i++;
  }
  keepPlain(n);
  flushText();
  matchDelimiters(head);
  return materialize(head.next, maxDepth);
}

/** `[text](https://…)` at `i`: the link and the index after it, or null when it is not one. */
function linkAt(src: string, i: number, maxDepth: number): { node: MdInline; end: number } | null {
  // The text: up to the first `]`; another `[` first means this bracket opens no link (the scan
  // stops where the next bracket's own scan starts, so brackets are never rescanned).
  let j = i + 1;
  while (j < src.length && j - i <= MAX_LINK_TEXT) {
    const c = src[j];
    if (c === "\\") j += 2;
    else if (c === "[") return null;
    else if (c === "]") break;
    else j++;
  }
  if (src[j] !== "]" || src[j + 1] !== "(") return null;
  const label = src.slice(i + 1, j);
  if (label.trim() === "") return null;
  // The destination: no whitespace, no brackets, parentheses balanced, then `)`.
  let k = j + 2;
  const from = k;
  let depth = 0;
  while (k < src.length && k - from <= MAX_URL) {
    const c = charAt(src, k);
    if (URL_STOP.test(c) || c === "[" || c === "]" || c === "<" || c === ">") return null;
    if (c === "(") depth++;
    else if (c === ")") {
      if (depth === 0) break;
      depth--;
    }
    k += c.length;
  }
  if (src[k] !== ")") return null;
  const href = httpsHref(src.slice(from, k));
  if (!href) return null;
  const children = parseInline(label, Math.min(maxDepth, LINK_TEXT_DEPTH), false);
  return { node: { type: "link", href, children }, end: k + 1 };
}

/**
 * A bare URL at `i`: its text, its href when it is an https URL (null: it stays text), and the
 * index after it; null when no `https://` starts there.
 */
function bareUrlAt(src: string, i: number): { text: string; href: string | null; end: number } | null {
  if (src.slice(i, i + 8).toLowerCase() !== "https://") return null;
  let end = i + 8;
  while (end < src.length) {
    const c = charAt(src, end);
    if (URL_STOP.test(c) || c === "<" || c === ">") break;
    end += c.length;
  }
  // Trailing punctuation ends the sentence, not the URL; a `)` only when it closes nothing.
  let open = 0;
  let close = 0;
  for (let k = i; k < end; k++) {
    if (src[k] === "(") open++;
    else if (src[k] === ")") close++;
  }
  while (end > i + 8) {
    const c = src[end - 1];
    if ("?!.,:;*_~'\"".includes(c)) end--;
    else if (c === ")" && close > open) {
      close--;
      end--;
    } else break;
  }
  const text = src.slice(i, end);
  if (end === i + 8) return { text, href: null, end };
  return { text, href: httpsHref(text), end };
}

/**
 * Pairs delimiter runs into spans, left to right, by CommonMark's flanking rules: a closer tries
 * only the nearest opener of its character (CommonMark would look further down the stack), and
 * openers of other characters between the two stop being openers. Each opener is pushed and popped once, and wrapping relinks in constant time.
 */
function matchDelimiters(head: Entry): void {
  const stacks: Record<DelimChar, Entry[]> = { "*": [], _: [], "~": [] };
  const unlink = (e: Entry) => {
    if (e.prev) e.prev.next = e.next;
    if (e.next) e.next.prev = e.prev;
  };
  let e = head.next;
  while (e) {
    const d = e.delim;
    if (d?.canClose) {
      const stack = stacks[d.char];
      while (d.count > 0 && stack.length) {
        const opener = stack[stack.length - 1];
        const od = opener.delim as NonNullable<Entry["delim"]>;
        // CommonMark's rule of three: a run that can both open and close pairs with one whose
        // length adds up to a multiple of 3 only when both are multiples of 3 (`*a**b**c*`).
        const either = (d.canOpen && d.canClose) || (od.canOpen && od.canClose);
        if (either && (d.length + od.length) % 3 === 0 && !(d.length % 3 === 0 && od.length % 3 === 0)) break;
        for (const other of Object.values(stacks)) {
          while (other !== stack && other.length && (other[other.length - 1].delim?.order ?? -1) > od.order) other.pop();
        }
        const use = d.char === "~" ? 2 : d.count >= 2 && od.count >= 2 ? 2 : 1;
        const type = d.char === "~" ? "strike" : use === 2 ? "strong" : "em";
        const first = opener.next === e ? null : opener.next;
        const last = e.prev === opener ? null : e.prev;
        const span: Entry = { prev: opener, next: e, span: { type, marker: d.char.repeat(use), first } };
        if (first) first.prev = null;
        if (last) last.next = null;
        opener.next = span;
        e.prev = span;
        od.count -= use;
        d.count -= use;
        if (od.count === 0) {
          stack.pop();
          unlink(opener);
        }
      }
      if (d.count === 0) unlink(e);
    }
    if (d && d.count > 0 && d.canOpen) stacks[d.char].push(e);
    e = e.next;
  }
}

/** The nodes of the entry list from `first`, spans deeper than `maxDepth` kept as their markers' text. Iterative. */
function materialize(first: Entry | null, maxDepth: number): MdInline[] {
  const root: MdInline[] = [];
  const push = (out: MdInline[], node: MdInline) => {
    const last = out[out.length - 1];
    if (node.type === "text" && last?.type === "text") out[out.length - 1] = { type: "text", text: last.text + node.text };
    else out.push(node);
  };
  type Frame = { next: Entry | null; out: MdInline[]; depth: number; close: string | null };
  const frames: Frame[] = [{ next: first, out: root, depth: 0, close: null }];
  while (frames.length) {
    const f = frames[frames.length - 1];
    const e = f.next;
    if (!e) {
      frames.pop();
      if (f.close) push(f.out, { type: "text", text: f.close });
      continue;
    }
    f.next = e.next;
    if (e.node) push(f.out, e.node);
    else if (e.delim) {
      if (e.delim.count > 0) push(f.out, { type: "text", text: e.delim.char.repeat(e.delim.count) });
    } else if (e.span) {
      if (f.depth < maxDepth) {
        const children: MdInline[] = [];
        f.out.push({ type: e.span.type, children });
        frames.push({ next: e.span.first, out: children, depth: f.depth + 1, close: null });
      } else {
        push(f.out, { type: "text", text: e.span.marker });
        frames.push({ next: e.span.first, out: f.out, depth: f.depth, close: e.span.marker });
      }
    }
  }
  return root;
}
