/**
 * Turn overhead vs a direct relay. Time from sending an async message
 * (the 202 path) to its signed callback arriving at a local HTTPS receiver
 * (scripts/bench/receiver.ts, certificate from a throwaway CA that workerd is told to trust),
 * for an HTTP tool that answers after a fixed 50 ms. The same is measured through a minimal relay
 * Worker the bench starts (server.ts: call the same tool, POST the same signed body to the same
 * receiver; no object, no storage). Every callback's signature is checked; a bad one is a failure.
 * Targets: bridge p50 ≤ 1.5 × relay p50, p99 ≤ 2 × relay p99.
 */
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { http } from "./harness";
import type { CallbackReceiver, ReceivedRequest } from "./receiver";
import { signatureValid } from "./signature";
import { type Ctx, type Phase, type Server, closedLoop } from "./lib";

export const TOOL_DELAY_MS = 50;
export const OVERHEAD_ROUTE = "bench-overhead";
const TIMEOUT_MS = 20_000;

/** An HTTP tool on 127.0.0.1 that answers `tool:<message>` after a fixed delay. */
export async function startDelayTool(delayMs = TOOL_DELAY_MS): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let message = "";
      try {
        message = String(JSON.parse(Buffer.concat(chunks).toString("utf8"))?.message ?? "");
      } catch {
        /* answer anyway */
      }
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(`tool:${message}`));
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return {
    baseUrl: `http://127.0.0.1:${a && typeof a === "object" ? a.port : 0}/tool`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Waits for callbacks by message id: hooks the receiver's record list so each arrival is stamped
 * with performance.now() the moment the receiver has the whole body.
 */
export class CallbackWaiter {
  private waiting = new Map<string, (r: { at: number; req: ReceivedRequest }) => void>();
  private early = new Map<string, { at: number; req: ReceivedRequest }>();

  constructor(rx: CallbackReceiver) {
    const list = rx.requests;
    const push = list.push.bind(list);
    list.push = (...items: ReceivedRequest[]) => {
      const at = performance.now();
      for (const req of items) {
        let id = "";
        try {
          id = String(JSON.parse(req.rawBody)?.message_id ?? "");
        } catch {
          /* not ours */
        }
        const w = this.waiting.get(id);
        if (w) {
          this.waiting.delete(id);
          w({ at, req });
        } else if (id) this.early.set(id, { at, req });
      }
      list.length = 0; // the bench needs no history; keep memory flat
      return push(...items);
    };
  }

  wait(id: string): Promise<{ at: number; req: ReceivedRequest } | null> {
    const got = this.early.get(id);
    if (got) {
      this.early.delete(id);
      return Promise.resolve(got);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(null);
      }, TIMEOUT_MS);
      this.waiting.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
    });
  }
}

/** Declares the delayed HTTP tool, an execution key that may run it, and an api route with the HTTPS callback; answers the callback secret. */
export async function setupOverhead(ctx: Ctx, toolUrl: string, callbackUrl: string): Promise<string> {
  const declared = await http(ctx.base, "POST", "/api/tools-config/entries", {
    key: ctx.admin,
    body: {
      title: "bench-delay",
      kind: "http",
      description: `answers after ${TOOL_DELAY_MS} ms (bench)`,
      url: toolUrl,
      input_schema: { type: "object", properties: { message: { type: ["string", "null"] } } },
      timeout_seconds: 10,
    },
  });
  if (declared.status >= 300) throw new Error(`declaring the delay tool failed: HTTP ${declared.status} ${JSON.stringify(declared.body)}`);
  const exec = await http(ctx.base, "POST", "/api/auth/api-keys", {
    key: ctx.admin,
    body: { user_id: "bench-exec-delay", description: "bench overhead execution key", scopes: ["tool:bench-delay"] },
  });
  if (exec.status !== 200) throw new Error(`minting the delay execution key failed: HTTP ${exec.status} ${JSON.stringify(exec.body)}`);
  const created = await http(ctx.base, "POST", `/api/conversations/${OVERHEAD_ROUTE}`, {
    key: ctx.admin,
    body: {
      door: "api",
      target_kind: "tool",
      target_name: "bench-delay",
      execution_key: "bench-exec-delay",
      callback_url: callbackUrl,
      turns_per_hour_override: 100_000_000,
    },
  });
  if (created.status !== 200 || typeof created.body?.data?.callback_secret !== "string")
    throw new Error(`creating the callback route failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.data.callback_secret;
}

/**
 * One closed-loop phase: each caller sends a message on its own thread, then waits for that
 * message's callback before sending the next. `url` is the bridge's message door or the relay.
 */
export function overheadPhase(
  name: string,
  url: string,
  apiKey: string | null,
  secret: string,
  waiter: CallbackWaiter,
  runId: string,
  callers: number,
  perCaller: number,
  maxSeconds: number,
): Promise<Phase> {
  return closedLoop(name, callers, perCaller, maxSeconds, async (c, i) => {
    const text = `overhead ${c}/${i}`;
    const t0 = performance.now();
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(apiKey ? { "x-api-key": apiKey } : {}) },
      body: JSON.stringify({ external_user_id: `${runId}-${c}`, text }),
    });
    const json = (await res.json().catch(() => null)) as { data?: { message_id?: string } } | null;
    if (res.status !== 202) return `HTTP ${res.status}`;
    const id = json?.data?.message_id;
    if (!id) return "no message_id";
    const got = await waiter.wait(id);
    if (!got) return "no callback in time";
    if (!signatureValid(secret, got.req.rawBody, got.req.headers["x-service-signature"])) return "bad signature";
    let body: { status?: string; answer?: string } = {};
    try {
      body = JSON.parse(got.req.rawBody);
    } catch {
      return "callback not JSON";
    }
    if (body.status !== "answered" || body.answer !== `tool:${text}`) return "wrong callback body";
    return { ms: got.at - t0 };
  });
}
