/**
 * One JSON call whose answer may stream (LLM endpoints, http agents). A `text/event-stream` answer
 * is read event by event as it arrives and each event's data handed to the caller at once; any
 * other answer is read whole and parsed as JSON, as callJsonEndpoint does (many OpenAI-compatible
 * servers ignore a request to stream).
 *
 * The bounds are callJsonEndpoint's (src/outbound/fetch.ts): the address guard before the send, no
 * redirects, one deadline over the whole exchange (a streamed body included) and one size cap over
 * every byte read. The caller's signal ends the call at once, mid-stream included. Failure messages
 * carry the endpoint's label and HTTP status only, never the endpoint's text.
 */
import { withTimeout } from "../platform/timeout";
import {
  MAX_RESPONSE_BYTES,
  type OutboundCall,
  type OutboundFailureKind,
  guardRefusal,
  parseJsonAnswer,
  requestHeaders,
  timeoutFailure,
  tooLargeFailure,
} from "./fetch";

/** `malformed`: the caller refused an event; `stopped`: the caller's signal ended the call. */
export type StreamFailureKind = OutboundFailureKind | "malformed" | "stopped";

export type StreamedResult =
  /** The endpoint answered JSON (not a stream): the parsed answer. */
  | { ok: true; streamed: false; value: unknown }
  /** The endpoint streamed; every event went to the caller. */
  | { ok: true; streamed: true }
  | { ok: false; kind: StreamFailureKind; message: string };

/** What the caller makes of one event's data: read on, stop reading (the answer is whole), or refuse the stream. */
export type EventVerdict = "more" | "done" | "malformed";

export interface StreamingCall extends OutboundCall {
  /** Ends the call when it aborts, before the send or mid-stream. */
  signal?: AbortSignal;
}

/**
 * Splits a server-sent events stream into the data of its events, fed a chunk at a time (a
 * line or a UTF-8 character may straddle chunks). Only `data` fields count: several `data` lines
 * of one event join with a newline; `event`, `id`, `retry` and comments are ignored. An event the
 * stream ends in without its blank line still counts.
 */
export class SseDataReader {
  private readonly decoder = new TextDecoder();
  private buffer = "";
  private data: string[] | null = null;

  /** The data of the events `bytes` completes. */
  push(bytes: Uint8Array): string[] {
    this.buffer += this.decoder.decode(bytes, { stream: true });
    return this.lines(false);
  }

  /** The data of the last event, at the end of the stream. */
  end(): string[] {
    this.buffer += this.decoder.decode();
    return this.lines(true);
  }

  private lines(final: boolean): string[] {
    const out: string[] = [];
    const breaks = /\r\n|\r|\n/g;
    let start = 0;
    for (let m = breaks.exec(this.buffer); m; m = breaks.exec(this.buffer)) {
      // A carriage return that ends the chunk may be the first half of a CRLF.
      if (!final && m[0] === "\r" && m.index === this.buffer.length - 1) break;
      this.line(this.buffer.slice(start, m.index), out);
      start = m.index + m[0].length;
    }
    this.buffer = this.buffer.slice(start);
    if (final) {
      if (this.buffer) this.line(this.buffer, out);
      this.buffer = "";
      this.line("", out);
    }
    return out;
  }

  private line(line: string, out: string[]): void {
    if (line === "") {
      if (this.data) out.push(this.data.join("\n"));
      this.data = null;
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== "data") return;
    const value = colon < 0 ? "" : line.slice(colon + 1);
    (this.data ??= []).push(value.startsWith(" ") ? value.slice(1) : value);
  }
}

function isEventStream(contentType: string | null): boolean {
  return (contentType ?? "").split(";")[0].trim().toLowerCase() === "text/event-stream";
}

type Exchange =
  | { status: number }
  | { transport: true }
  | { stopped: true }
  | { too_large: true }
  | { malformed: true }
  | { text: string }
  | { streamed: true };

/**
 * Reads `body` chunk by chunk under the size cap, handing each chunk to `take` (false: stop
 * reading). An abort of `signal` cancels the read at once, even of a body that does not end with
 * its request. Throws what `take` throws.
 */
async function readBody(
  body: ReadableStream<Uint8Array> | null,
  signal: AbortSignal,
  take: (chunk: Uint8Array | null) => Promise<"more" | "stop" | "malformed">,
): Promise<"done" | "malformed" | "too_large" | "transport" | "aborted"> {
  if (!body) return (await take(null)) === "malformed" ? "malformed" : "done";
  const reader = body.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", cancel, { once: true });
  let size = 0;
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch {
        return signal.aborted ? "aborted" : "transport";
      }
      if (signal.aborted) return "aborted";
      if (next.done) return (await take(null)) === "malformed" ? "malformed" : "done";
      size += next.value.byteLength;
      if (size > MAX_RESPONSE_BYTES) return "too_large";
      const verdict = await take(next.value);
      if (verdict !== "more") return verdict === "stop" ? "done" : "malformed";
    }
  } finally {
    signal.removeEventListener("abort", cancel);
    cancel();
  }
}

/**
 * POSTs `body` as JSON asking for a stream (`accept: text/event-stream, application/json`) and
 * reads the answer: an event stream event by event through `onEvent`, anything else whole as
 * JSON. `onEvent` is awaited before the next event is read; what it throws is thrown here.
 */
export async function callStreamingEndpoint(
  fetchFn: typeof fetch,
  call: StreamingCall,
  onEvent: (data: string) => EventVerdict | Promise<EventVerdict>,
): Promise<StreamedResult> {
  const refused = guardRefusal(call);
  if (refused) return refused;
  const stopped = { ok: false, kind: "stopped", message: `${call.label} call was stopped` } as const;
  if (call.signal?.aborted) return stopped;
  const headers = requestHeaders(call.headers, "text/event-stream, application/json");
  const timed = await withTimeout<Exchange>(call.timeoutMs, async (deadline) => {
    const signal = call.signal ? AbortSignal.any([deadline, call.signal]) : deadline;
    let res: Response;
    try {
      res = await fetchFn(call.url, { method: call.method, headers, body: JSON.stringify(call.body), redirect: "manual", signal });
    } catch {
      return call.signal?.aborted ? { stopped: true } : { transport: true };
    }
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel().catch(() => undefined);
      return { status: res.status };
    }
    let read: Awaited<ReturnType<typeof readBody>>;
    let json: string | null = null;
    if (isEventStream(res.headers.get("content-type"))) {
      const sse = new SseDataReader();
      read = await readBody(res.body, signal, async (chunk) => {
        for (const data of chunk ? sse.push(chunk) : sse.end()) {
          // A deadline or a stop that fell while the caller took the last event ends the call here.
          if (signal.aborted) return "stop";
          const verdict = await onEvent(data);
          if (verdict !== "more") return verdict === "done" ? "stop" : "malformed";
        }
        return "more";
      });
    } else {
      const decoder = new TextDecoder();
      let text = "";
      read = await readBody(res.body, signal, async (chunk) => {
        text += chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
        return "more";
      });
      json = text;
    }
    if (call.signal?.aborted) return { stopped: true };
    if (read === "aborted" || read === "transport") return { transport: true };
    if (read === "too_large") return { too_large: true };
    if (read === "malformed") return { malformed: true };
    return json === null ? { streamed: true } : { text: json };
  });
  if (call.signal?.aborted) return stopped;
  if (!timed.ok) return timeoutFailure(call);
  const ex = timed.value;
  if ("stopped" in ex) return stopped;
  if ("transport" in ex) return { ok: false, kind: "transport", message: `${call.label} could not be reached` };
  if ("status" in ex) return { ok: false, kind: "http_status", message: `${call.label} answered HTTP ${ex.status}` };
  if ("too_large" in ex) return tooLargeFailure(call.label);
  if ("malformed" in ex) return { ok: false, kind: "malformed", message: `${call.label} streamed a malformed answer` };
  if ("streamed" in ex) return { ok: true, streamed: true };
  const parsed = parseJsonAnswer(call.label, ex.text);
  return parsed.ok ? { ok: true, streamed: false, value: parsed.value } : parsed;
}
