/**
 * One local HTTP server impersonating the four providers' send APIs, for the channel e2e suite.
 * `CHANNEL_*_API_BASE` vars point wrangler dev at `http://127.0.0.1:<port>/<channel>`. Every send
 * is recorded with its channel, path, headers and parsed body, and answered as the real API does.
 */
import { type IncomingMessage, type Server, createServer } from "node:http";

export interface ProviderSend {
  channel: "twilio" | "whatsapp" | "telegram" | "slack";
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, any>;
  /** The id the fake answered with (what a receipt would name). */
  providerId: string;
}

export interface FakeProviders {
  port: number;
  base: (channel: ProviderSend["channel"]) => string;
  sends: ProviderSend[];
  close: () => Promise<void>;
}

let counter = 0;

/** `onSend` hears every send as it is recorded, before the fake answers it. */
export async function startFakeProviders(opts: { onSend?: (send: ProviderSend) => void } = {}): Promise<FakeProviders> {
  const sends: ProviderSend[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const url = new URL(req.url ?? "/", "http://fake");
      const channel = url.pathname.split("/")[1] as ProviderSend["channel"];
      const body = req.headers["content-type"]?.includes("application/x-www-form-urlencoded")
        ? Object.fromEntries(new URLSearchParams(raw))
        : raw
          ? JSON.parse(raw)
          : {};
      const providerId = `${channel}-${++counter}`;
      const send: ProviderSend = { channel, path: url.pathname, headers: req.headers, body, providerId };
      sends.push(send);
      opts.onSend?.(send);
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (channel === "twilio") return json(201, { sid: providerId, status: "queued" });
      if (channel === "whatsapp") return json(200, { messaging_product: "whatsapp", messages: [{ id: providerId }] });
      if (channel === "telegram") return json(200, { ok: true, result: { message_id: counter } });
      if (channel === "slack") return json(200, { ok: true, ts: `${counter}.000100` });
      json(404, { error: "unknown fake provider path" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    port,
    base: (channel) => `http://127.0.0.1:${port}/${channel}`,
    sends,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
