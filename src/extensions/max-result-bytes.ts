/**
 * `max_result_bytes` (transformer): caps a successful result's size, measured as compact JSON in
 * UTF-8. Over the cap, `on_over: "error"` (default) fails the call with `tool_error`;
 * `"truncate"` cuts a string result to the cap (ending in `…`) and replaces any other result with
 * `{truncated: true, bytes, preview}` where `preview` is the start of its JSON text. Pure.
 */
import { z } from "zod";
import { type CallResult, type ExtensionDef, extensionFailure } from "./model";

export const MaxResultBytesConfig = z
  .object({
    bytes: z.number().int().min(16).max(1_048_576).default(65_536),
    on_over: z.enum(["error", "truncate"]).default("error"),
  })
  .strict();
export type MaxResultBytesConfig = z.infer<typeof MaxResultBytesConfig>;

const ELLIPSIS = "…";
const encoder = new TextEncoder();

function utf8Length(s: string): number {
  return encoder.encode(s).byteLength;
}

/** The longest prefix of `s` (whole code points) of at most `max` UTF-8 bytes. Pure. */
export function cutUtf8(s: string, max: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    // A string's iteration yields whole code points, never an empty string.
    const cp = ch.codePointAt(0) ?? 0;
    const size = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + size > max) break;
    bytes += size;
    end += ch.length;
  }
  return s.slice(0, end);
}

/** The result within the cap, or the failure. Pure. */
export function capResult(value: unknown, config: MaxResultBytesConfig): CallResult {
  const text = JSON.stringify(value) ?? "null";
  const size = utf8Length(text);
  if (size <= config.bytes) return { ok: true, value };
  if (config.on_over === "error") return extensionFailure(`the result is larger than max_result_bytes (${config.bytes} bytes)`);
  const room = config.bytes - utf8Length(ELLIPSIS);
  if (typeof value === "string") return { ok: true, value: cutUtf8(value, room) + ELLIPSIS };
  return { ok: true, value: { truncated: true, bytes: size, preview: cutUtf8(text, room) + ELLIPSIS } };
}

export const maxResultBytes: ExtensionDef<MaxResultBytesConfig> = {
  name: "max_result_bytes",
  kind: "transformer",
  description:
    'Caps a successful result at `bytes` of compact JSON (default 65536). Over it, `on_over: "error"` (default) fails the call; "truncate" cuts a string result, or replaces another with {truncated, bytes, preview}.',
  config: MaxResultBytesConfig,
  async apply(config, _call, next) {
    const r = await next();
    return r.ok ? capResult(r.value, config) : r;
  },
};
