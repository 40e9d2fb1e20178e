/**
 * The streamed run of `POST /api/agents/{name}/runs` (decisions §4): data-only SSE frames with
 * a `type`, ending in `stream.end` or `stream.error`, and a `: keepalive` comment while the run
 * is quiet so proxies keep the connection open.
 *
 * The caller's key is checked again before each push (`stillAllowed`, batched by
 * src/platform/http/live-stream.ts, so a burst of deltas costs one check): once the key was
 * revoked, disabled or lost its grant, nothing more is written and the stream ends. The run itself
 * is not stopped (it stores its memory, as when the client goes away); each of its tool calls
 * authorizes the key again on its own.
 */
import type { ExecutionKeyRef, TargetContext } from "../context";
import type { AgentEvent } from "./events";
import { tracedDirectRun } from "../../observability/runs/direct";
import { canPark, createInteraction } from "../../interactions/create";
import { type AgentRunResult, runAgent } from "./run";
import { guardedSender } from "../../platform/http/live-stream";
import { must } from "../../platform/must";

export const KEEPALIVE_MS = 15_000;

export type StreamFrame = AgentEvent | { type: "stream.end" } | { type: "stream.error"; message: string };

const encoder = new TextEncoder();

/** One data frame (pure). JSON never contains a raw newline, so one `data:` line suffices. */
export function sseFrame(frame: StreamFrame): string {
  return `data: ${JSON.stringify(frame)}\n\n`;
}

/** One comment line (pure); clients ignore it. */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}

/** The message a caller sees when a run fails: no key state, no endpoint detail beyond ours. */
export function clientSafeFailure(r: Extract<AgentRunResult, { ok: false }>): string {
  if (r.kind === "denied") return "run denied: the key may not run this agent";
  if (r.kind === "unknown_agent") return "agent not found";
  return r.message;
}

/**
 * Starts the run and answers at once with its stream. The run finishes (and stores its memory)
 * even when the client goes away; `waitUntil` keeps the isolate alive for it.
 */
export function streamAgentRun(
  ctx: TargetContext,
  name: string,
  input: { thread_id: string; user_message: string },
  opts: {
    asKey?: ExecutionKeyRef;
    keepaliveMs?: number;
    waitUntil?: (p: Promise<unknown>) => void;
    headers?: Record<string, string>;
    /** Whether the calling key may still receive the run; asked before each push (absent: no key to check). */
    stillAllowed?: () => Promise<boolean>;
  },
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  let open = true;
  const write = async (chunk: string) => {
    if (!open) return;
    try {
      await writer.write(encoder.encode(chunk));
    } catch {
      open = false; // the client left; the run carries on without an audience
    }
  };
  const send = opts.stillAllowed
    ? guardedSender(write, opts.stillAllowed, () => {
        open = false;
        void writer.close().catch(() => undefined);
      }).send
    : write;
  const keepalive = setInterval(() => void send(sseComment("keepalive")), opts.keepaliveMs ?? KEEPALIVE_MS);
  const done = (async () => {
    try {
      // A run of a key may park on ask_user when the interactions store is on: the
      // interaction is stored, the stream ends with suspended_final, and an operator's answer resumes it.
      const park = Boolean(opts.asKey) && canPark(ctx.settings);
      const go = async (): Promise<AgentRunResult & { interaction_id?: string }> => {
        const r = await runAgent(ctx, name, input, { asKey: opts.asKey, park, onEvent: (e) => send(sseFrame(e)) });
        if (!r.ok || !r.suspended) return r;
        const created = await createInteraction(ctx.env, ctx.settings, {
          ask: r.suspended.ask,
          origin: {
            kind: "agent_run",
            thread_id: input.thread_id,
            caller: must(opts.asKey, "the key of a run that parked (only a key's run may park)").user_id,
          },
          target: { kind: "agent", name },
          parked: r.suspended.parked,
        });
        await send(sseFrame({ type: "suspended_final", interaction_ids: [created.interaction_id], thread_id: input.thread_id, expiry_at: created.expires_at }));
        return { ...r, interaction_id: created.interaction_id };
      };
      // The run's trace: a direct agent run of the calling key, recorded in the background.
      const r = opts.asKey
        ? await tracedDirectRun(
            ctx.env,
            ctx,
            {
              kind: "agent_run",
              target: { kind: "agent", name },
              caller: opts.asKey.user_id,
              threadId: input.thread_id,
              input: { user_message: input.user_message },
            },
            go,
            (done) => (done.interaction_id ? { suspended: { interaction_id: done.interaction_id } } : done.text),
            opts.waitUntil,
          )
        : await go();
      await send(sseFrame(r.ok ? { type: "stream.end" } : { type: "stream.error", message: clientSafeFailure(r) }));
    } catch (err) {
      // runAgent reports run failures itself; this is storage failing under it (e.g. D1).
      console.error(`agent ${name} stream failed:`, err);
      await send(sseFrame({ type: "stream.error", message: "agent run failed" }));
    } finally {
      clearInterval(keepalive);
      if (open) await writer.close().catch(() => undefined);
    }
  })();
  opts.waitUntil?.(done);
  return new Response(readable, {
    status: 200,
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...(opts.headers ?? {}) },
  });
}
