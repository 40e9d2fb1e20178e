/**
 * A fake marketplace registry for end-to-end tests: serves one index document at
 * `https://127.0.0.1:<port>/index.json` under the test PKI (workerd trusts it through `trustEnv`),
 * which the test replaces with `publish` to play a registry publishing new versions. It records
 * every request and can go down and come back on the same port.
 */
import { restartableHttps } from "./restartable-https";
import type { TestPki } from "./tls";

export interface RegistryRequest {
  method: string;
  path: string;
  accept: string | undefined;
}

export interface FakeRegistry {
  /** `https://127.0.0.1:<port>/index.json`: the value of MARKETPLACE_REGISTRY_URL. */
  readonly url: string;
  /** Every request so far, oldest first. */
  readonly requests: RegistryRequest[];
  /** Serves `index` from now on. */
  publish: (index: unknown) => void;
  /** Closes the listener and every open connection (the registry becomes unreachable). */
  stop: () => Promise<void>;
  /** Listens again on the same port. */
  start: () => Promise<void>;
}

export const INDEX_PATH = "/index.json";

/** Starts the registry serving `index`; `port` 0 picks a free one. */
export async function startFakeRegistry(pki: TestPki, index: unknown, port = 0): Promise<FakeRegistry> {
  let current = JSON.stringify(index);
  const requests: RegistryRequest[] = [];
  const https = restartableHttps(
    pki,
    (req, res) => {
      requests.push({ method: req.method ?? "", path: req.url ?? "", accept: req.headers.accept });
      req.resume();
      req.on("end", () => {
        if (req.method === "GET" && req.url === INDEX_PATH) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(current);
        } else {
          res.writeHead(404, { "content-type": "application/json" });
          res.end('{"error":"not found"}');
        }
      });
    },
    port,
  );
  await https.start();
  return {
    get url() {
      return `https://127.0.0.1:${https.port}${INDEX_PATH}`;
    },
    requests,
    publish: (next) => {
      current = JSON.stringify(next);
    },
    stop: https.stop,
    start: https.start,
  };
}
