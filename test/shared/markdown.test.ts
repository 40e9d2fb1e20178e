/**
 * The markdown subset's parser (src/shared/markdown.ts): what it reads, what it leaves as text, and
 * that hostile input yields nothing but https links, keeps every word, and parses in linear time.
 */
import { describe, expect, it } from "vitest";
import { MARKDOWN_MAX_CHARS, MARKDOWN_MAX_DEPTH, type MdBlock, type MdInline, httpsHref, openFenceAfter, parseMarkdown } from "../../src/shared/markdown";
import { HOSTILE, hugeInputs, keepsText } from "./markdown-corpus";

const p = (...children: MdInline[]): MdBlock => ({ type: "paragraph", children });
const t = (text: string): MdInline => ({ type: "text", text });
const strong = (...children: MdInline[]): MdInline => ({ type: "strong", children });
const em = (...children: MdInline[]): MdInline => ({ type: "em", children });
const br: MdInline = { type: "break" };

type Seen = { text: string; hrefs: string[]; depth: number };

/** Everything the tree shows (text, code, link hrefs) and its deepest inline nesting. */
function seen(blocks: readonly MdBlock[]): Seen {
  const out: Seen = { text: "", hrefs: [], depth: 0 };
  const inline = (nodes: readonly MdInline[], depth: number) => {
    out.depth = Math.max(out.depth, depth);
    for (const n of nodes) {
      if (n.type === "text" || n.type === "code") out.text += `${n.text} `;
      else if (n.type === "break") out.text += "\n";
      else {
        inline(n.children, depth + 1);
        if (n.type === "link") {
          out.hrefs.push(n.href);
          out.text += `${n.href} `;
        }
      }
    }
  };
  const block = (b: MdBlock) => {
    if (b.type === "paragraph") inline(b.children, 0);
    else if (b.type === "code") out.text += `${b.lang} ${b.text} `;
    else if (b.type === "quote") b.children.forEach(block);
    // An ordered list shows its numbers.
    else
      b.items.forEach((item, k) => {
        if (b.ordered) out.text += `${b.start + k} `;
        inline(item.children, 0);
        const sub = item.list;
        if (sub)
          sub.items.forEach((s, j) => {
            if (sub.ordered) out.text += `${sub.start + j} `;
            inline(s.children, 0);
          });
      });
  };
  blocks.forEach(block);
  return out;
}

describe("parseMarkdown: the subset", () => {
  it("reads paragraphs, line breaks and the inline spans", () => {
    expect(parseMarkdown("one\ntwo\n\nthree")).toEqual([p(t("one"), br, t("two")), p(t("three"))]);
    expect(parseMarkdown("**b** __b__ *e* _e_ ~~s~~ `c*d*`")).toEqual([
      p(strong(t("b")), t(" "), strong(t("b")), t(" "), em(t("e")), t(" "), em(t("e")), t(" "), { type: "strike", children: [t("s")] }, t(" "), {
        type: "code",
        text: "c*d*",
      }),
    ]);
    expect(parseMarkdown("***both***")).toEqual([p(em(strong(t("both"))))]);
    expect(parseMarkdown("*a **b** c*")).toEqual([p(em(t("a "), strong(t("b")), t(" c")))]);
    expect(parseMarkdown("*foo**bar**baz*")).toEqual([p(em(t("foo"), strong(t("bar")), t("baz")))]);
  });

  it("leaves intra-word underscores, lone markers and unbalanced runs as text", () => {
    expect(parseMarkdown("snake_case_name and file_name.txt")).toEqual([p(t("snake_case_name and file_name.txt"))]);
    expect(parseMarkdown("2 * 3 * 4")).toEqual([p(t("2 * 3 * 4"))]);
    expect(parseMarkdown("**open")).toEqual([p(t("**open"))]);
    expect(parseMarkdown("~single~ ~~~triple~~~")).toEqual([p(t("~single~ ~~~triple~~~"))]);
    expect(parseMarkdown("`open")).toEqual([p(t("`open"))]);
    expect(parseMarkdown("a*b*c")).toEqual([p(t("a"), em(t("b")), t("c"))]);
  });

  it("reads backslash escapes and leaves entities and HTML alone", () => {
    expect(parseMarkdown("\\*no\\* \\_no\\_ C:\\dir")).toEqual([p(t("*no* _no_ C:\\dir"))]);
    expect(parseMarkdown("<b>x</b> &amp; &#60;")).toEqual([p(t("<b>x</b> &amp; &#60;"))]);
  });

  it("reads links and bare URLs, https only, re-serialized", () => {
    expect(parseMarkdown("see [the *docs*](https://Example.com/a_b) now")).toEqual([
      p(t("see "), { type: "link", href: "https://example.com/a_b", children: [t("the "), em(t("docs"))] }, t(" now")),
    ]);
    expect(parseMarkdown("at https://x.example/p_(q)).")).toEqual([
      p(t("at "), { type: "link", href: "https://x.example/p_(q)", children: [t("https://x.example/p_(q)")] }, t(").")),
    ]);
    expect(parseMarkdown("**https://x.example**")).toEqual([p(strong({ type: "link", href: "https://x.example/", children: [t("https://x.example")] }))]);
    for (const text of ["[a](http://x.example)", "[a](javascript:alert(1))", "[a](//x.example)", "[a](/x)", "[a](mailto:a@b.example)", "[ ](x)"])
      expect(parseMarkdown(text)).toEqual([p(t(text))]);
    // Without a text there is no link, but the URL is still a bare one.
    expect(parseMarkdown("[](https://x.example)")).toEqual([
      p(t("[]("), { type: "link", href: "https://x.example/", children: [t("https://x.example")] }, t(")")),
    ]);
    expect(parseMarkdown("xhttps://x.example")).toEqual([p(t("xhttps://x.example"))]);
  });

  it("gates URLs: https with a host and no credentials", () => {
    expect(httpsHref("https://a.example")).toBe("https://a.example/");
    expect(httpsHref("HTTPS://A.example/b?c#d")).toBe("https://a.example/b?c#d");
    for (const bad of ["http://a.example", "javascript:alert(1)", "https:a.example", "https://u:p@a.example", " https://a.example", "data:,x", "https://"])
      expect(httpsHref(bad)).toBeNull();
  });

  it("reads headings as strong paragraphs and quotes one level deep", () => {
    expect(parseMarkdown("# Title #\n#hashtag")).toEqual([p(strong(t("Title"))), p(t("#hashtag"))]);
    expect(parseMarkdown("> a **b**\n> > c\n\nafter")).toEqual([{ type: "quote", children: [p(t("a "), strong(t("b")), br, t("> c"))] }, p(t("after"))]);
  });

  it("reads lists with one level of nesting", () => {
    expect(parseMarkdown("intro\n- a\n  - b\n    - c\n- d\n\n3. three\n4. four")).toEqual([
      p(t("intro")),
      {
        type: "list",
        ordered: false,
        start: 1,
        items: [
          {
            children: [t("a")],
            list: { type: "list", ordered: false, start: 1, items: [{ children: [t("b")] }, { children: [t("c")] }] },
          },
          { children: [t("d")] },
        ],
      },
      { type: "list", ordered: true, start: 3, items: [{ children: [t("three")] }, { children: [t("four")] }] },
    ]);
    // "2024. was…" inside a paragraph is text; `- - -` is not an item.
    expect(parseMarkdown("In\n2024. was a year\n- - -")).toEqual([p(t("In"), br, t("2024. was a year"), br, t("- - -"))]);
  });

  it("reads fenced code blocks, an unclosed one running to the end", () => {
    expect(parseMarkdown("```js\nlet a = 1 < 2;\n  *x*\n```\nafter")).toEqual([{ type: "code", lang: "js", text: "let a = 1 < 2;\n  *x*" }, p(t("after"))]);
    expect(parseMarkdown("~~~<script>\nx\n")).toEqual([{ type: "code", lang: "", text: "x\n" }]);
    expect(openFenceAfter("text\n```py\ncode")).toBe("```py");
    expect(openFenceAfter("```\ncode\n```\n")).toBeNull();
  });

  it("caps span nesting, keeping deeper markers as text", () => {
    const text = `${"*_".repeat(8)}x${"_*".repeat(8)}`;
    const s = seen(parseMarkdown(text));
    expect(s.depth).toBeLessThanOrEqual(MARKDOWN_MAX_DEPTH);
    expect(s.text.replace(/\s/g, "")).toContain("x");
  });

  it("shows a text over the cap as plain paragraphs", () => {
    const text = `**not bold** ${"x".repeat(MARKDOWN_MAX_CHARS)}\n\nnext`;
    expect(parseMarkdown(text)).toEqual([p(t(`**not bold** ${"x".repeat(MARKDOWN_MAX_CHARS)}`)), p(t("next"))]);
  });
});

describe("parseMarkdown: hostile input", () => {
  it.each(HOSTILE.map((h) => [h]))("yields only https links and keeps every word: %j", (input) => {
    const blocks = parseMarkdown(input);
    const s = seen(blocks);
    for (const href of s.hrefs) {
      const u = new URL(href);
      expect(u.protocol).toBe("https:");
      expect(u.href).toBe(href);
      expect(u.username + u.password).toBe("");
    }
    expect(s.hrefs.join(" ")).not.toMatch(/javascript|data:|vbscript|@evil/i);
    // A fence's info string is a language hint, not text: only a plain word is kept.
    const shown = input.replace(/^( {0,3}(```|~~~)).*$/gm, "$1");
    expect(keepsText(shown, s.text)).toBe(true);
  });

  it("parses every adversarial long input in linear time, losing no word", () => {
    for (const [name, input] of Object.entries(hugeInputs(MARKDOWN_MAX_CHARS - 16))) {
      const start = performance.now();
      const blocks = parseMarkdown(input);
      const took = performance.now() - start;
      expect(took, name).toBeLessThan(1500);
      expect(keepsText(input, seen(blocks).text), name).toBe(true);
    }
    for (const [name, input] of Object.entries(hugeInputs(50_000))) {
      const start = performance.now();
      parseMarkdown(input);
      expect(performance.now() - start, name).toBeLessThan(1500);
    }
  });

  it("never throws on odd input", () => {
    for (const input of ["", "\n\n", "\r\n\r\n", "\u0000", "\uD800", "[", "]", "(", ")", "`", "\\", "> ", "- ", "1. ", "#", "```"])
      expect(() => parseMarkdown(input)).not.toThrow();
    expect(parseMarkdown(undefined as unknown as string)).toEqual([]);
  });
});
