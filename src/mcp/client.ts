/**
 * One session with a remote MCP server over Streamable HTTP, through the SDK's own client
 * (`@modelcontextprotocol/sdk`: Client + StreamableHTTPClientTransport), never a hand-written
 * protocol. Each listing and each call opens its own short session (initialize, the work, then
 * close), so nothing is kept between requests and any isolate can serve any call.
 *
 * Every request of the session goes through the context's `fetch` (the network edge, so workerd
 * tests fake the network there) wrapped by `guardedFetch`: the outbound address guard runs before
 * each request (redirects the SDK follows within the origin included), redirects are never left to
 * the platform, and a response body is cut at MAX_RESPONSE_BYTES. One deadline bounds the session.
 *
 * Failure messages name the server's title, an HTTP status or a JSON-RPC code: never the URL, a
 * header, the server's error text or the platform's (decisions §14; docs/mcp.md "Failures").
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { ConnectionRefError, connectionHeaderValue } from "../connectors/token-resolution";
import type { Env } from "../platform/env";
import { type OutboundPolicy, checkOutboundUrl } from "../platform/net/address-guard";
import type { Settings } from "../platform/settings/settings";
import { EnvRefError, resolveCallHeaders } from "../outbound/env-refs";
import { urlOrigin } from "../outbound/origin-lock";
import { MAX_RESPONSE_BYTES } from "../outbound/fetch";
import { withTimeout } from "../platform/timeout";
import type { McpServerSpec } from "./declarations";
import { envWithSecretValues } from "./secret-env";

/** Who we say we are in `initialize`. */
export const CLIENT_INFO = { name: "conversation-bridge", version: "0.1.0" } as const;

/** What a session needs; a TargetContext is one. */
export interface McpContext {
  env: Env;
  db: D1Database;
  settings: Settings;
  fetch: typeof fetch;
  now: () => Date;
}

export type McpFailureKind = "timeout" | "transport" | "http_status" | "protocol" | "config";
export type McpOutcome<T> = { ok: true; value: T } | { ok: false; kind: McpFailureKind; message: string };

class OutboundRefused extends Error {
  constructor(readonly reason: string) {
    super("refused by the outbound address guard");
  }
}

class ResponseTooLarge extends Error {}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** A response whose body errors once it passes `max` bytes (the SDK reads bodies whole). */
function capped(res: Response, max: number): Response {
  if (!res.body || NULL_BODY_STATUSES.has(res.status)) return res;
  let seen = 0;
  const body = res.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > max) controller.error(new ResponseTooLarge("response too large"));
        else controller.enqueue(chunk);
      },
    }),
  );
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * The fetch the SDK's transport uses: the guard before every request, manual redirects, the
 * session's deadline, a capped body. Exported for the tests of the guard.
 */
export function guardedFetch(base: typeof fetch, policy: OutboundPolicy, deadline: AbortSignal): typeof fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : input instanceof URL ? input.href : String(input);
    const verdict = checkOutboundUrl(url, policy);
    if (!verdict.ok) throw new OutboundRefused(verdict.reason);
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    const res = await base(input, { ...init, redirect: "manual", signal });
    return capped(res, MAX_RESPONSE_BYTES);
  };
}

/** The failure an exception of a session stands for (pure; exported for its unit tests). */
export function classifyMcpError(err: unknown, label: string): { kind: McpFailureKind; message: string } {
  if (err instanceof OutboundRefused) return { kind: "transport", message: `${label} refused by the outbound address guard: ${err.reason}` };
  if (err instanceof ResponseTooLarge || (err instanceof Error && err.cause instanceof ResponseTooLarge)) {
    return { kind: "protocol", message: `${label} answered more than ${MAX_RESPONSE_BYTES} bytes` };
  }
  if (err instanceof StreamableHTTPError) {
    return err.code !== undefined && err.code > 0
      ? { kind: "http_status", message: `${label} answered HTTP ${err.code}` }
      : { kind: "protocol", message: `${label} answered a response that is not MCP (unexpected content type)` };
  }
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return { kind: "timeout", message: `${label} did not answer in time` };
    if (err.code === ErrorCode.ConnectionClosed) return { kind: "transport", message: `${label} closed the connection` };
    return { kind: "protocol", message: `${label} answered JSON-RPC error ${Number.isInteger(err.code) ? err.code : "(no code)"}` };
  }
  if (err instanceof SyntaxError || (err instanceof Error && err.name === "ZodError")) {
    return { kind: "protocol", message: `${label} answered a message that is not valid MCP` };
  }
  if (err instanceof Error && err.name === "UnauthorizedError") return { kind: "http_status", message: `${label} answered HTTP 401` };
  return { kind: "transport", message: `${label} could not be reached` };
}

function seconds(ms: number): string {
  return `${+(ms / 1000).toFixed(3)}s`;
}

/**
 * Opens a session with the server (its headers resolved now: literals, env references through
 * the secret-env store and the env, connection references through their objects), runs `work`
 * with the connected client, and closes it. The whole session runs under `timeoutMs`.
 */
export async function withMcpSession<T>(
  ctx: McpContext,
  server: { title: string; spec: McpServerSpec },
  timeoutMs: number,
  work: (client: Client, options: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<McpOutcome<T>> {
  const label = `MCP server ${server.title}`;
  const url = server.spec.config.url;
  const verdict = checkOutboundUrl(url, ctx.settings.outbound);
  if (!verdict.ok) return { ok: false, kind: "transport", message: `${label} refused by the outbound address guard: ${verdict.reason}` };

  let headers: Record<string, string>;
  try {
    const env = await envWithSecretValues(ctx.db, ctx.settings.config, ctx.env, server.spec.config.headers, urlOrigin(url));
    headers = await resolveCallHeaders(env, server.spec.config.headers, url, (ref) => connectionHeaderValue(ctx, ref, url));
  } catch (err) {
    if (err instanceof EnvRefError || err instanceof ConnectionRefError) return { ok: false, kind: "config", message: err.message };
    throw err;
  }

  let failure: unknown = null;
  const timed = await withTimeout(timeoutMs, async (signal) => {
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      fetch: guardedFetch(ctx.fetch, ctx.settings.outbound, signal),
      requestInit: { headers },
    });
    const client = new Client(CLIENT_INFO, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
    const options = { signal, timeout: timeoutMs };
    try {
      await client.connect(transport, options);
      return await work(client, options);
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      // Ends the server's session when it made one (stateful servers); a refusal changes nothing.
      if (!signal.aborted) await transport.terminateSession().catch(() => undefined);
      await client.close().catch(() => undefined);
    }
  }).catch((err: unknown) => {
    failure = err;
    return null;
  });
  if (timed === null) return { ok: false, ...classifyMcpError(failure, label) };
  if (!timed.ok) return { ok: false, kind: "timeout", message: `${label} did not answer within ${seconds(timeoutMs)}` };
  return { ok: true, value: timed.value };
}
