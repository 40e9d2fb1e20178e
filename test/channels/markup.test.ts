/**
 * The channels' formats of the markdown subset (src/channels/markup.ts) and the planning that cuts
 * a long answer into messages (planFormatted): exact output for the subset, then the hostile
 * corpus, where each format must stay well-formed (Telegram HTML by Telegram's own nesting rules,
 * Slack's control characters escaped), link only to https, and keep every word.
 */
import { describe, expect, it } from "vitest";
import { type Markup, formatMarkdown, planFormatted } from "../../src/channels/markup";
import { HOSTILE, hugeInputs, keepsText } from "../shared/markdown-corpus";

const fmt = (markup: Markup, md: string) => formatMarkdown(markup, md).text;
const SAMPLE = [
  "# Title",
  "**Bold** _it_ ~~gone~~ `a<b>` & [the **docs**](https://ex.example/?a=1&b=|x) https://ex.example",
  "",
  "- one",
  "  - sub `c`",
  "- two",
  "",
  "> quoted [l](https://q.example) `qc`",
  "",
  "```js",
  "if (a < b) {}",
  "```",
].join("\n");

describe("formatMarkdown: the subset per channel", () => {
  it("telegram: HTML with escaping, code kept out of other entities, no link or code in a quote", () => {
    expect(fmt("telegram-html", SAMPLE)).toBe(
      [
        "<b>Title</b>",
        "",
        '<b>Bold</b> <i>it</i> <s>gone</s> <code>a&lt;b&gt;</code> &amp; <a href="https://ex.example/?a=1&amp;b=|x">the <b>docs</b></a> <a href="https://ex.example/">https://ex.example</a>',
        "",
        "• one",
        "    ◦ sub <code>c</code>",
        "• two",
        "",
        "<blockquote>quoted l (https://q.example/) qc</blockquote>",
        "",
        '<pre><code class="language-js">if (a &lt; b) {}</code></pre>',
      ].join("\n"),
    );
    expect(fmt("telegram-html", "**bold `code`** [`x`](https://a.example)")).toBe('<b>bold code</b> <a href="https://a.example/">x</a>');
  });

  it("slack: mrkdwn with &, <, > escaped and <url|text> links", () => {
    expect(fmt("slack-mrkdwn", SAMPLE)).toBe(
      [
        "*Title*",
        "",
        "*Bold* _it_ ~gone~ `a&lt;b&gt;` &amp; <https://ex.example/?a=1&amp;b=%7Cx|the docs> <https://ex.example/|https://ex.example>",
        "",
        "• one",
        "    ◦ sub `c`",
        "• two",
        "",
        "> quoted <https://q.example/|l> `qc`",
        "",
        "```\nif (a &lt; b) {}\n```",
      ].join("\n"),
    );
    // No text becomes a mention; a destination with `>` is no link (its https part is a bare one).
    expect(fmt("slack-mrkdwn", "<!channel> <@U123> [x](https://a.example/>)")).toBe("&lt;!channel&gt; &lt;@U123&gt; [x](<https://a.example/>&gt;)");
  });

  it("whatsapp: its own markers, links spelled out", () => {
    expect(fmt("whatsapp", SAMPLE)).toBe(
      [
        "*Title*",
        "",
        "*Bold* _it_ ~gone~ ```a<b>``` & the docs (https://ex.example/?a=1&b=|x) https://ex.example",
        "",
        "• one",
        "    ◦ sub ```c```",
        "• two",
        "",
        "> quoted l (https://q.example/) ```qc```",
        "",
        "```if (a < b) {}```",
      ].join("\n"),
    );
  });

  it("plain (SMS): markers removed, links as text (url), GSM-safe bullets", () => {
    expect(fmt("plain", SAMPLE)).toBe(
      [
        "Title",
        "",
        "Bold it gone a<b> & the docs (https://ex.example/?a=1&b=|x) https://ex.example",
        "",
        "- one",
        "    - sub c",
        "- two",
        "",
        "> quoted l (https://q.example/) qc",
        "",
        "if (a < b) {}",
      ].join("\n"),
    );
    expect(fmt("plain", "1. a\n2. b **c**")).toBe("1. a\n2. b c");
  });

  it("plain text passes through every format unchanged but for escaping", () => {
    const text = "Hello, your order 1234 ships today.\nThanks!";
    for (const m of ["telegram-html", "slack-mrkdwn", "whatsapp", "plain"] as const) expect(fmt(m, text)).toBe(text);
  });
});

const TELEGRAM_OPEN = /^<(b|i|s|code|pre|blockquote)>$|^<code class="language-[A-Za-z0-9_+#.-]+">$|^<a href="([^"<>]*)">$/;
const INLINE_ENTITIES = new Set(["b", "i", "s"]);

/** Checks Telegram HTML as Telegram reads it; returns what a reader sees, each link's href after its text. */
function checkTelegram(html: string): string {
  const stack: string[] = [];
  const hrefs: string[] = [];
  let shown = "";
  for (const token of html.split(/(<[^>]*>)/)) {
    if (!token.startsWith("<")) {
      expect(token).not.toMatch(/[<>]/);
      expect(token.replace(/&(amp|lt|gt|quot);/g, "")).not.toContain("&");
      shown += token;
      continue;
    }
    // A tag separates words as the markers it replaced did.
    shown += " ";
    const close = /^<\/(b|i|s|code|pre|blockquote|a)>$/.exec(token);
    if (close) {
      expect(stack.pop(), html).toBe(close[1]);
      if (close[1] === "a") shown += ` ${hrefs.pop()} `;
      continue;
    }
    const open = TELEGRAM_OPEN.exec(token);
    expect(open, `unexpected tag ${token}`).not.toBeNull();
    const name = token.startsWith("<a ") ? "a" : token.startsWith("<code") ? "code" : (open?.[1] ?? "");
    const inside = stack[stack.length - 1];
    // Telegram's rules: code only inside pre (the language form), pre inside nothing, nothing
    // inside code; a blockquote not nested, holding neither links nor code.
    if (name === "code" && inside !== undefined) expect(inside, html).toBe("pre");
    if (name === "pre") expect(stack, html).toEqual([]);
    if (inside === "code") throw new Error(`an entity inside code: ${html}`);
    if (name === "blockquote") expect(stack, html).toEqual([]);
    if (stack.includes("blockquote")) expect(INLINE_ENTITIES.has(name), html).toBe(true);
    if (name === "a") {
      const href = (open?.[2] ?? "").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
      const u = new URL(href);
      expect(u.protocol).toBe("https:");
      expect(u.href).toBe(href);
      hrefs.push(href);
    }
    stack.push(name);
  }
  expect(stack, html).toEqual([]);
  return shown;
}

/** Checks Slack mrkdwn: `<…>` only as links to https; returns what a reader sees. */
function checkSlack(text: string): string {
  let shown = "";
  // A quote's marker is the one `>` Slack reads as such, at the start of a line.
  for (const token of text.replace(/^> /gm, "").split(/(<[^<>]*>)/)) {
    if (!token.startsWith("<")) {
      expect(token).not.toMatch(/[<>]/);
      expect(token.replace(/&(amp|lt|gt);/g, "")).not.toContain("&");
      shown += token;
      continue;
    }
    const m = /^<(https:\/\/[^|<> ]+)(?:\|([^<>]*))?>$/.exec(token);
    expect(m, `unexpected control sequence ${token}`).not.toBeNull();
    const href = (m?.[1] ?? "").replace(/&amp;/g, "&");
    expect(new URL(href).protocol).toBe("https:");
    shown += ` ${m?.[2] ?? ""} ${href} `;
  }
  return shown;
}

// A fence's info string is a language hint, not text (see test/shared/markdown.test.ts).
const shownText = (md: string) => md.replace(/^( {0,3}(```|~~~)).*$/gm, "$1");

describe("formatMarkdown: hostile input", () => {
  it.each(HOSTILE.map((h) => [h]))("stays well-formed, links only to https and keeps every word: %j", (input) => {
    const expected = shownText(input);
    const tg = formatMarkdown("telegram-html", input);
    expect(keepsText(expected, checkTelegram(tg.text)), tg.text).toBe(true);
    const slack = fmt("slack-mrkdwn", input);
    // A backtick inside code is shown as ˋ in Slack, which has no escape for it.
    expect(keepsText(expected, checkSlack(slack).replace(/ˋ/g, "`")), slack).toBe(true);
    for (const m of ["whatsapp", "plain"] as const) {
      const out = fmt(m, input);
      expect(keepsText(expected, out), out).toBe(true);
      // Only https URLs are spelled out as links (`text (url)`); any other stays as written (`[text](url)`).
      for (const spelled of out.matchAll(/ \(([a-z][a-z0-9+.-]*:[^ )]*)\)/gi)) expect(spelled[1]).toMatch(/^https:\/\//);
    }
  });

  it("formats every adversarial long input quickly", () => {
    for (const [name, input] of Object.entries(hugeInputs(16_000))) {
      const start = performance.now();
      for (const m of ["telegram-html", "slack-mrkdwn", "whatsapp", "plain"] as const) formatMarkdown(m, input);
      expect(performance.now() - start, name).toBeLessThan(3000);
    }
  });
});

describe("planFormatted: one well-formed message per chunk", () => {
  const long = [
    "Intro with **bold words** and a [link](https://a.example/x).",
    "",
    "```ts",
    ...Array.from({ length: 30 }, (_, i) => `const line${i} = "<${i}>" && true;`),
    "```",
    "",
    ...Array.from({ length: 20 }, (_, i) => `- item ${i} with _emphasis_ & <tag>`),
  ].join("\n");

  it("cuts, reopens a code block cut in two, and formats each chunk on its own", () => {
    const plan = planFormatted("telegram-html", long, 300, 50);
    if (!plan.ok) throw new Error("too long");
    expect(plan.chunks.length).toBeGreaterThan(3);
    let shown = "";
    for (const c of plan.chunks) {
      shown += ` ${checkTelegram(c.text)}`;
      expect(formatMarkdown("telegram-html", c.markdown).length).toBeLessThanOrEqual(300);
    }
    expect(keepsText(shownText(long), shown)).toBe(true);
    // Every chunk holding code lines shows them as code, the continued ones included.
    const codeChunks = plan.chunks.filter((c) => c.text.includes("const line"));
    expect(codeChunks.length).toBeGreaterThan(1);
    for (const c of codeChunks) expect(c.text).toMatch(/^(.*\n)*?<pre><code class="language-ts">/);
  });

  it("cuts narrower when escaping makes a chunk too long as the provider counts it", () => {
    const amps = "& ".repeat(400);
    const plan = planFormatted("slack-mrkdwn", amps, 500, 50);
    if (!plan.ok) throw new Error("too long");
    for (const c of plan.chunks) expect([...c.text].length).toBeLessThanOrEqual(500);
    expect(
      plan.chunks
        .map((c) => c.text)
        .join(" ")
        .match(/&amp;/g)?.length,
    ).toBe(400);
    // Telegram counts what it shows, so the same text needs no narrower cut there.
    const tg = planFormatted("telegram-html", amps, 500, 50);
    expect(tg.ok && tg.chunks.length).toBe(2);
  });

  it("drops blank chunks, keeps the web's text as written, and refuses what needs too many messages", () => {
    expect(planFormatted("telegram-html", "```\n```", 100, 5)).toEqual({ ok: true, chunks: [] });
    expect(planFormatted(null, "**as written** ", 100, 5)).toEqual({ ok: true, chunks: [{ markdown: "**as written** ", text: "**as written** " }] });
    expect(planFormatted("plain", "word ".repeat(100), 10, 5)).toEqual({ ok: false, reason: "too_long" });
  });
});
