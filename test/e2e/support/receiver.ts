/**
 * An HTTPS callback receiver on 127.0.0.1 for end-to-end tests. It records every request
 * (method, path, headers, raw body, the status it answered), can be told to fail the next N
 * requests with 500, and can be stopped and started again on the same port.
 */
import { createServer, type Server } from "node:https";
import type { Socket } from "node:net";
import type { TestPki } from "./tls";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body exactly as received (the signature covers these bytes). */
  rawBody: string;
  /** The status this receiver answered. */
  answered: number;
  /** Local receive time (ms since epoch), for diagnostics only. */
  receivedAt: number;
}

export interface CallbackReceiver {
  /** `https://127.0.0.1:<port>` */
  origin: string;
  port: number;
  /** Every request so far, oldest first. */
  readonly requests: ReceivedRequest[];
  /** Answers the next `n` requests with 500 (Infinity: until told otherwise). */
  failNext: (n: number) => void;
  /** Answers 2xx again from now on. */
  succeed: () => void;
  /** Closes the listener and every open connection. */
  stop: () => Promise<void>;
  /** Listens again on the same port. */
  start: () => Promise<void>;
}

/** Starts the receiver with the test PKI's server certificate; `port` 0 picks a free one. */
export async function startReceiver(pki: TestPki, port = 0): Promise<CallbackReceiver> {
  const requests: ReceivedRequest[] = [];
  let failuresLeft = 0;
  let server: Server | null = null;
  const sockets = new Set<Socket>();
  let boundPort = port;

  function listen(): Promise<void> {
    const srv = createServer({ cert: pki.cert, key: pki.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const fail = failuresLeft > 0;
        if (fail) failuresLeft -= 1;
        const answered = fail ? 500 : 200;
        requests.push({
          method: req.method ?? "",
          path: req.url ?? "",
          headers: { ...req.headers },
          rawBody: Buffer.concat(chunks).toString("utf8"),
          answered,
          receivedAt: Date.now(),
        });
        res.writeHead(answered, { "content-type": "application/json" });
        res.end(fail ? '{"error":"scripted failure"}' : '{"ok":true}');
      });
    });
    srv.on("secureConnection", (s: Socket) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    return new Promise((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(boundPort, "127.0.0.1", () => {
        const a = srv.address();
        if (a && typeof a === "object") boundPort = a.port;
        server = srv;
        resolve();
      });
    });
  }

  async function stop(): Promise<void> {
    const srv = server;
    if (!srv) return;
    server = null;
    for (const s of sockets) s.destroy();
    sockets.clear();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  }

  await listen();
  return {
    get origin() {
      return `https://127.0.0.1:${boundPort}`;
    },
    get port() {
      return boundPort;
    },
    requests,
    failNext: (n) => {
      failuresLeft = n;
    },
    succeed: () => {
      failuresLeft = 0;
    },
    stop,
    start: listen,
  };
}
