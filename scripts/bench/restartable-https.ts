/**
 * An HTTPS listener on 127.0.0.1 that can go down (listener and every open connection closed) and
 * come back on the same port: what the callback receivers need to play an unreachable receiver.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Server, createServer } from "node:https";
import type { Socket } from "node:net";
import type { TestPki } from "./tls";

export interface RestartableHttps {
  /** The bound port (the requested one, or the free one picked on the first start). */
  readonly port: number;
  /** Listens (again) on the same port. */
  start: () => Promise<void>;
  /** Closes the listener and destroys every open connection. */
  stop: () => Promise<void>;
}

/** Serves `handler` with the test PKI's server certificate; `port` 0 picks a free one. */
export function restartableHttps(pki: TestPki, handler: (req: IncomingMessage, res: ServerResponse) => void, port = 0): RestartableHttps {
  let server: Server | null = null;
  const sockets = new Set<Socket>();
  let boundPort = port;

  function start(): Promise<void> {
    const srv = createServer({ cert: pki.cert, key: pki.key }, handler);
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

  return {
    get port() {
      return boundPort;
    },
    start,
    stop,
  };
}
