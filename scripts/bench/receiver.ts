/**
 * An HTTPS callback receiver on 127.0.0.1 for end-to-end tests. It records every request
 * (method, path, headers, raw body, the status it answered), can be told to fail the next N
 * requests with 500, and can be stopped and started again on the same port.
 */
import { restartableHttps } from "./restartable-https";
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
  const https = restartableHttps(
    pki,
    (req, res) => {
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
    },
    port,
  );

  await https.start();
  return {
    get origin() {
      return `https://127.0.0.1:${https.port}`;
    },
    get port() {
      return https.port;
    },
    requests,
    failNext: (n) => {
      failuresLeft = n;
    },
    succeed: () => {
      failuresLeft = 0;
    },
    stop: https.stop,
    start: https.start,
  };
}
