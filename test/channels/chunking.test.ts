import { describe, expect, it } from "vitest";
import { ChannelConfigError, TOO_LONG_TEXT, maxCharsFor, planChunks, splitMessage } from "../../src/channels/chunking";
import { HttpError } from "../../src/platform/http/errors";
import { DEFAULT_MAX_MESSAGE_CHARS } from "../../src/platform/settings/settings";

const cpLen = (s: string) => [...s].length;

/** A deterministic PRNG (mulberry32) so generated inputs are the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe("splitMessage", () => {
  it("gives no chunks for an empty text and one chunk for a short one", () => {
    expect(splitMessage("", 10)).toEqual([]);
    expect(splitMessage("hello", 10)).toEqual(["hello"]);
  });

  it("keeps a text of exactly maxChars whole and splits at maxChars + 1", () => {
    expect(splitMessage("abcde", 5)).toEqual(["abcde"]);
    expect(splitMessage("abcdef", 5)).toEqual(["abcde", "f"]);
    expect(splitMessage("abcd efgh", 5)).toEqual(["abcd ", "efgh"]);
  });

  it("splits after the last space inside the window, the space ending the earlier chunk", () => {
    expect(splitMessage("hello world foo", 11)).toEqual(["hello ", "world foo"]);
    expect(splitMessage("one two three four", 9)).toEqual(["one two ", "three ", "four"]);
  });

  it("hard-cuts a text without whitespace at exactly maxChars", () => {
    expect(splitMessage("abcdefghij", 3)).toEqual(["abc", "def", "ghi", "j"]);
    const url = `https://example.com/${"x".repeat(50)}`;
    expect(splitMessage(url, 20).map(cpLen)).toEqual([20, 20, 20, 10]);
  });

  it("prefers the last newline over a later space when it keeps the chunk at least half a window", () => {
    expect(splitMessage("aaaa\nbb cc dd", 10)).toEqual(["aaaa\n", "bb cc dd"]);
    expect(splitMessage("para one.\npara two has words", 16)).toEqual(["para one.\n", "para two has ", "words"]);
  });

  it("does not cut at a newline near the window start (it would waste a chunk); takes the last space", () => {
    expect(splitMessage("a\nbbbbbb cccc", 10)).toEqual(["a\nbbbbbb ", "cccc"]);
  });

  it("counts code points: never splits a surrogate pair, an emoji counts as one", () => {
    expect(splitMessage("😀😀😀😀😀", 2)).toEqual(["😀😀", "😀😀", "😀"]);
    expect(splitMessage("ab😀cd", 3)).toEqual(["ab😀", "cd"]);
    for (const chunk of splitMessage("x😀".repeat(40), 7)) {
      expect(cpLen(chunk)).toBeLessThanOrEqual(7);
      expect(LONE_SURROGATE.test(chunk)).toBe(false);
    }
  });

  it("splits multibyte text by characters, not bytes", () => {
    const cjk = "中文消息测试没有空格的长句子";
    expect(splitMessage(cjk, 5)).toEqual(["中文消息测", "试没有空格", "的长句子"]);
    expect(splitMessage("Grüße aus Köln und München", 12)).toEqual(["Grüße aus ", "Köln und ", "München"]);
  });

  it("never cuts a chunk made only of separators when a solid cut exists", () => {
    // " bbbb" after a hard cut: cutting after the leading space would send a blank message.
    expect(splitMessage("aaaa bbbb", 4)).toEqual(["aaaa", " bbb", "b"]);
    expect(splitMessage("\n\nabc def", 5)).toEqual(["\n\nabc", " def"]);
  });

  it("refuses a non-positive or fractional maxChars", () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => splitMessage("x", bad)).toThrow(RangeError);
  });

  it("holds its contract over many generated inputs (exact concatenation, window size, cut points)", () => {
    const alphabet = ["a", "b", "Z", " ", " ", "\n", "é", "中", "😀", "👍🏽", "\u200d", ".", "ß"];
    const rand = prng(20260501);
    for (let n = 0; n < 600; n++) {
      const len = Math.floor(rand() * 120);
      let text = "";
      for (let i = 0; i < len; i++) text += alphabet[Math.floor(rand() * alphabet.length)];
      const max = 1 + Math.floor(rand() * 25);
      const chunks = splitMessage(text, max);
      expect(chunks.join("")).toBe(text);
      if (text === "") expect(chunks).toEqual([]);
      chunks.forEach((chunk, i) => {
        expect(cpLen(chunk)).toBeGreaterThan(0);
        expect(cpLen(chunk)).toBeLessThanOrEqual(max);
        expect(LONE_SURROGATE.test(chunk)).toBe(false);
        // Every chunk but the last is either a full hard cut or ends at a separator.
        if (i < chunks.length - 1 && cpLen(chunk) < max) expect(chunk.endsWith(" ") || chunk.endsWith("\n")).toBe(true);
      });
      // Never more chunks than a plain hard cut needs, when a window never has to give way.
      if (!/[ \n]/.test(text)) expect(chunks.length).toBe(Math.ceil(cpLen(text) / max));
    }
  });
});

describe("planChunks", () => {
  it("plans the chunks when they fit in maxChunks (the boundary included)", () => {
    expect(planChunks("abcdef", 2, 3)).toEqual({ ok: true, chunks: ["ab", "cd", "ef"] });
    expect(planChunks("hi", 1600, 10)).toEqual({ ok: true, chunks: ["hi"] });
  });

  it("refuses with too_long past maxChunks instead of truncating", () => {
    expect(planChunks("abcdefg", 2, 3)).toEqual({ ok: false, reason: "too_long" });
    expect(planChunks("x".repeat(1600 * 10 + 1), 1600, 10)).toEqual({ ok: false, reason: "too_long" });
    expect(planChunks("x".repeat(1600 * 10), 1600, 10)).toMatchObject({ ok: true });
  });

  it("exports the fixed too-long text, which fits one message on every default channel", () => {
    expect(TOO_LONG_TEXT).toBe("Sorry, the answer was too long to send here. Please ask for a shorter response.");
    for (const max of Object.values(DEFAULT_MAX_MESSAGE_CHARS)) expect(planChunks(TOO_LONG_TEXT, max, 1)).toEqual({ ok: true, chunks: [TOO_LONG_TEXT] });
  });

  it("refuses a non-positive maxChunks", () => {
    expect(() => planChunks("x", 10, 0)).toThrow(RangeError);
  });
});

describe("maxCharsFor", () => {
  it("reads the channel's entry", () => {
    expect(maxCharsFor("twilio", { maxMessageChars: DEFAULT_MAX_MESSAGE_CHARS })).toBe(1600);
    expect(maxCharsFor("slack", { maxMessageChars: DEFAULT_MAX_MESSAGE_CHARS })).toBe(40000);
  });

  it("throws a typed config error (not an HTTP 4xx) for a channel absent from the map", () => {
    const settings = { maxMessageChars: { twilio: 1600 } };
    let caught: unknown;
    try {
      maxCharsFor("telegram", settings);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ChannelConfigError);
    expect(caught).not.toBeInstanceOf(HttpError);
    expect((caught as ChannelConfigError).channel).toBe("telegram");
    expect((caught as Error).message).toContain("CONVERSATIONS_MAX_MESSAGE_CHARS");
    // Inherited object keys are not entries.
    expect(() => maxCharsFor("constructor", settings)).toThrow(ChannelConfigError);
  });
});
