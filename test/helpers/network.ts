/**
 * The tests' one fake network. Outbound HTTP is faked only where it leaves the code under test:
 * at the network edge (`fakeNetwork`, through setEdgeFetch) or as the fetch a unit is handed
 * (`fakeFetch`). Both record the same call shape and answer through the same handler, so every
 * test reads a sent request the same way and no test reaches the real network.
 */
import { setEdgeFetch } from "../../src/platform/net/edge-fetch";
import { must } from "../../src/platform/must";

/** One outbound request as the fake saw it. */
export interface NetCall {
  url: string;
  method: string;
  /** Lower-case names, as a Headers object lists them. */
  headers: Record<string, string>;
  /** The body as text ("" when there is none). */
  body: string;
  signal: AbortSignal | null;
  /** The body parsed as JSON; throws when it is not JSON. Not enumerable, so `toEqual` on a call ignores it. */
  readonly json: any;
}

/** Answers one request: the request itself, its body as text, and every call so far (this one last). */
export type NetHandler = (req: Request, body: string, calls: NetCall[]) => Response | Promise<Response>;

/** A fetch that records every request and answers it with `handler`, for code that is handed its fetch. */
export function fakeFetch(handler: NetHandler): { fetch: typeof fetch; calls: NetCall[] } {
  const calls: NetCall[] = [];
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    // Decoded by hand: workerd warns when .text() reads a non-text content type such as a form.
    const body = req.body ? new TextDecoder().decode(await req.clone().arrayBuffer()) : "";
    const call = {
      url: req.url,
      method: req.method,
      headers: Object.fromEntries(req.headers),
      body,
      signal: init?.signal ?? (input instanceof Request ? input.signal : null),
    };
    Object.defineProperty(call, "json", { get: () => JSON.parse(body) });
    calls.push(call as NetCall);
    return handler(req, body, calls);
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

/**
 * Puts a fake network at the edge for this test: every outbound request of the Worker and its
 * objects is recorded and answered by `handler`. The workers setup removes it after each test.
 */
export function fakeNetwork(handler: NetHandler): NetCall[] {
  const { fetch, calls } = fakeFetch(handler);
  setEdgeFetch(fetch);
  return calls;
}

/** Takes the fake network away from the edge again. */
export function clearNetwork(): void {
  setEdgeFetch(null);
}

/**
 * A handler that answers only the listed `"METHOD url"` pairs. Any other request rejects its
 * fetch, so a test that scripts nothing still never reaches the real network.
 */
export function answerOnly(routes: Record<string, NetHandler>): NetHandler {
  return (req, body, calls) => {
    const answer = routes[`${req.method} ${req.url}`];
    if (!answer) throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
    return answer(req, body, calls);
  };
}

/** A recording fetch that never answers until the request's signal aborts (drives timeouts without timing anything). */
export function hangingFetch(): { fetch: typeof fetch; calls: NetCall[] } {
  return fakeFetch(
    (_req, _body, calls) =>
      new Promise<Response>((_, reject) => {
        const { signal } = must(calls.at(-1), "the call being answered");
        if (!signal) return reject(new Error("a hanging fetch needs a signal to end it"));
        if (signal.aborted) return reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason));
      }),
  );
}

/** A JSON answer. */
export function json(value: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json", ...headers } });
}
