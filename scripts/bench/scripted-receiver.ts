/**
 * An HTTPS callback receiver for the hol and faults phases, with
 * the test PKI's certificate (scripts/bench/tls.ts) like the e2e receiver, but scriptable per
 * request: answer 2xx, answer 503, reset the connection, or hang (never answering 2xx) past the
 * bridge's callback timeout; and it can go fully down (listener and connections closed) and come
 * back on the same port. It records, per callback, its arrival time, message_id, thread_id and
 * what it did, so FIFO order and 2xx counts are judged here, at the receiver.
 */
import { performance } from "node:perf_hooks";
import { restartableHttps } from "./restartable-https";
import type { TestPki } from "./tls";

export type Action = "ok" | "503" | "reset" | "hang";

export interface Arrival {
  at: number;
  messageId: string;
  threadId: string;
  action: Action;
  body: string;
}

export interface ScriptedReceiver {
  origin: string;
  arrivals: Arrival[];
  /** Decides what to do with each callback (default: always "ok"). */
  decide: (messageId: string) => Action;
  down: () => Promise<void>;
  up: () => Promise<void>;
  stop: () => Promise<void>;
}

export async function startScriptedReceiver(pki: TestPki, hangMs = 2_500): Promise<ScriptedReceiver> {
  const timers = new Set<NodeJS.Timeout>();
  const https = restartableHttps(pki, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      const body = Buffer.concat(chunks).toString("utf8");
      let messageId = "";
      let threadId = "";
      try {
        const j = JSON.parse(body);
        messageId = String(j?.message_id ?? "");
        threadId = String(j?.thread_id ?? "");
      } catch {
        /* recorded with empty ids */
      }
      const action = rx.decide(messageId);
      rx.arrivals.push({ at, messageId, threadId, action, body });
      if (action === "ok") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"ok":true}');
      } else if (action === "503") {
        res.writeHead(503, { "content-type": "application/json" });
        res.end('{"error":"scripted 503"}');
      } else if (action === "reset") {
        req.socket.destroy();
      } else {
        // Hang past the bridge's callback timeout, then drop the connection: never a late 2xx.
        const t = setTimeout(() => {
          timers.delete(t);
          req.socket.destroy();
        }, hangMs);
        timers.add(t);
      }
    });
  });
  const rx: ScriptedReceiver = {
    origin: "",
    arrivals: [],
    decide: () => "ok",
    down: https.stop,
    up: https.start,
    stop: async () => {
      for (const t of timers) clearTimeout(t);
      await https.stop();
    },
  };
  await https.start();
  rx.origin = `https://127.0.0.1:${https.port}`;
  return rx;
}
