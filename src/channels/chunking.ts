/**
 * Splitting an answer into provider messages (decisions §8 "Channel sends"). Pure.
 *
 * Characters are Unicode code points, so a surrogate pair (an emoji, say) is never split and counts
 * as one. A chunk ends at the last newline or space inside its window, the separator staying at
 * the end of the earlier chunk, so the chunks concatenate to exactly the original text.
 */

/** The fixed reply when an answer needs more than `max_outbound_chunks` messages (spec §7). */
export const TOO_LONG_TEXT = "Sorry, the answer was too long to send here. Please ask for a shorter response.";

/** A routed channel missing from `max_message_chars` (spec §7: a loud config error at send, not a 4xx). */
export class ChannelConfigError extends Error {
  readonly code = "channel-not-in-max-message-chars";
  constructor(readonly channel: string) {
    super(`channel '${channel}' has no entry in CONVERSATIONS_MAX_MESSAGE_CHARS; add one to send on it`);
    this.name = "ChannelConfigError";
  }
}

/** The split cap of `channel`; throws ChannelConfigError when the map lacks it. */
export function maxCharsFor(channel: string, settings: { maxMessageChars: Readonly<Record<string, number>> }): number {
  if (!Object.hasOwn(settings.maxMessageChars, channel)) throw new ChannelConfigError(channel);
  return settings.maxMessageChars[channel];
}

const isSeparator = (c: string) => c === " " || c === "\n";

/**
 * Splits `text` into chunks of at most `maxChars` code points that concatenate to `text`.
 *
 * The cut in each window is, in order of preference:
 * 1. after the last newline, when that keeps the chunk at least half a window long (a newline near
 *    the window's start would otherwise yield a tiny chunk and waste the chunk budget);
 * 2. after the last space or newline;
 * 3. a hard cut at the window's end (no separator, e.g. a long URL or unspaced script).
 * A cut is never taken where the chunk would hold only separators, so a whitespace-only chunk can
 * appear only when the text itself has a separator run as long as a window, or ends with one
 * longer than the room left. An empty text gives no chunks.
 */
export function splitMessage(text: string, maxChars: number): string[] {
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new RangeError("maxChars must be a positive integer");
  const cps = Array.from(text);
  const chunks: string[] = [];
  let start = 0;
  while (cps.length - start > maxChars) {
    const end = start + maxChars; // exclusive
    let solid = start;
    while (solid < end && isSeparator(cps[solid])) solid++;
    // A chunk ending at separator index i holds a non-separator only when i > solid.
    let cut = -1;
    const halfway = Math.max(solid + 1, start + Math.ceil(maxChars / 2) - 1);
    for (let i = end - 1; i >= halfway; i--) {
      if (cps[i] === "\n") {
        cut = i;
        break;
      }
    }
    if (cut < 0) {
      for (let i = end - 1; i > solid; i--) {
        if (isSeparator(cps[i])) {
          cut = i;
          break;
        }
      }
    }
    const stop = cut < 0 ? end : cut + 1;
    chunks.push(cps.slice(start, stop).join(""));
    start = stop;
  }
  if (start < cps.length) chunks.push(cps.slice(start).join(""));
  return chunks;
}

export type ChunkPlan = { ok: true; chunks: string[] } | { ok: false; reason: "too_long" };

/**
 * The send plan for an answer: its chunks, or `too_long` when it needs more than `maxChunks`
 * messages (never truncated). On `too_long` the caller sends TOO_LONG_TEXT (planned the same way)
 * and fails the record.
 */
export function planChunks(text: string, maxChars: number, maxChunks: number): ChunkPlan {
  if (!Number.isInteger(maxChunks) || maxChunks < 1) throw new RangeError("maxChunks must be a positive integer");
  const chunks = splitMessage(text, maxChars);
  return chunks.length > maxChunks ? { ok: false, reason: "too_long" } : { ok: true, chunks };
}
