/**
 * Hostile markdown for the parser, the channel formatters and the chat page (test/shared/markdown.test.ts,
 * test/channels/markup.test.ts, test/browser/markdown.browser.test.ts): markup and script, foreign and
 * obfuscated link schemes, unbalanced and nested markers, invisible and right-to-left characters,
 * entities and backslashes. Each entry is short enough for one chat message; HUGE builds the long ones.
 */
export const HOSTILE: readonly string[] = [
  "<script>window.__pwned = 1</script> after the script",
  '<img src=x onerror="window.__pwned = 1"> image tag',
  '<a href="javascript:window.__pwned = 1">anchor</a> and <iframe src="https://evil.example"></iframe>',
  "[js](javascript:window.__pwned=1) [mixed](JaVaScRiPt:window.__pwned=1) [spaced]( javascript:window.__pwned=1)",
  "[tab](java\tscript:window.__pwned=1) [entity](java&#115;cript:window.__pwned=1) [hexentity](&#x6A;avascript:window.__pwned=1)",
  "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) [vb](vbscript:msgbox) [file](file:///etc/passwd)",
  "[plain http](http://insecure.example/page) [mail](mailto:someone@example.com) [tel](tel:+15550100)",
  "[relative](/api/keys) [dots](../up) [protocol relative](//evil.example/x) [no slashes](https:evil.example)",
  "[credentials](https://user:secret@evil.example/) [backslashes](https:\\\\evil.example)",
  '[quote break](https://ok.example/"onmouseover="window.__pwned=1) [angle](https://ok.example/<script>)',
  "[zero width](java\u200Bscript:window.__pwned=1) [rtl](https://ok.example/\u202Eexe.txt)",
  "bare javascript:window.__pwned=1 and data:text/html,<b>x</b> and http://insecure.example stay text",
  "a bare https://ok.example/path_with_underscores_(and_parens)?q=1&r=2#frag, then more.",
  "https://ok.example/<script>window.__pwned=1</script> after a bare link",
  "**bold [inner link](https://ok.example/a_b_c) *em inside*** and __also bold__",
  "[**strong** _em_ `code` ~~gone~~ https://inner.example](https://outer.example/x)",
  "***a** **b* *c** __d_ _e__ ~~f~ ~g~~ `h`` ``i` [j [k](https://ok.example) l] m](",
  "*".repeat(40) + " stars " + "_".repeat(40) + " unders " + "~".repeat(40),
  "snake_case_name and __init__ and 2*3*4 and a_b*c_d*e and file_name.txt",
  "\u202Eright to left override\u202C and \u200Bzero\u200Dwidth\uFEFF and \u2066isolate\u2069 and تشغيل",
  "&lt;script&gt;window.__pwned=1&lt;/script&gt; &amp; &#60;b&#62; &quot;quoted&quot; &nbsp;",
  "back\\slash \\*not em\\* \\[not link\\](https://ok.example) C:\\path\\to\\file \\",
  "# <b>heading</b> with `code`\n## second ##\n> quoted <script>window.__pwned=1</script>\n> > nested quote",
  "- item <i>one</i>\n  - nested [link](javascript:window.__pwned=1)\n    - deeper\n- item two\n\n1. first\n2. second",
  "```html\n<script>window.__pwned = 1</script>\n<img src=x onerror=alert(1)>\n```\nafter the fence",
  "```<script>\nfence with a hostile language\n```\n~~~\ntilde fence, never closed",
  "emoji 🦊 **bold 🦊** _🦊_ [🦊](https://ok.example/🦊) and a lone surrogate \uD800 end",
];

/** Inputs that once made naive parsers slow: each must parse in linear time. */
export function hugeInputs(size: number): Record<string, string> {
  const rep = (s: string) => s.repeat(Math.max(1, Math.floor(size / s.length)));
  return {
    stars: rep("*"),
    underscores: rep("_"),
    tildes: rep("~~ "),
    openBrackets: rep("["),
    closeBrackets: rep("]"),
    linkStarts: rep("[a](https://x.example/"),
    unclosedLinks: rep("[a]("),
    backticks: rep("`a``"),
    alternating: rep("*_"),
    nested: `${rep("*_~~").slice(0, size / 2)}x${rep("~~_*").slice(0, size / 2)}`,
    urls: rep("https://"),
    parens: rep("https://a.example/))) "),
    backslashes: rep("\\"),
    lists: rep("- a\n  - b\n"),
    quotes: rep("> "),
    fences: rep("```\n"),
    headings: rep("#"),
    spaces: `${" ".repeat(size - 1)}x`,
    breaks: rep("a  \n"),
    pairs: rep("**a**"),
  };
}

/**
 * The words of `s` (letters and digits), lower-cased: what no format may drop. A percent escape
 * separates words (a link's href is re-serialized, so `"` in it arrives as `%22`).
 */
export function words(s: string): string[] {
  return (s.replace(/%[0-9A-Fa-f]{2}/g, " ").match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase());
}

/** Whether `needle` appears in `hay` in order (gaps allowed). */
export function inOrder(needle: readonly string[], hay: readonly string[]): boolean {
  let j = 0;
  for (const w of hay) if (j < needle.length && w === needle[j]) j++;
  return j === needle.length;
}

/**
 * Whether every letter and digit of `input` is in `output`, in order. Compared letter by letter,
 * not word by word: a marker removed between two words joins them (`2*3*4` shows as 2, an
 * emphasized 3, and 4), which loses nothing.
 */
export function keepsText(input: string, output: string): boolean {
  return inOrder([...words(input).join("")], [...words(output).join("")]);
}
