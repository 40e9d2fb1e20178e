import { setEdgeFetch } from "../../src/platform/net/edge-fetch";

export interface EdgeCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * Puts a fake network at the edge for this test: every outbound request is recorded and
 * answered by `handler`; anything it does not answer fails loudly. Restored after each test.
 */
export function fakeNetwork(handler: (req: Request, body: string, calls: EdgeCall[]) => Response | Promise<Response>) {
  const calls: EdgeCall[] = [];
  setEdgeFetch(async (input, init) => {
    const req = new Request(input, init);
    // Decoded by hand: workerd warns when .text() reads a non-text content type such as a form.
    const body = req.body ? new TextDecoder().decode(await req.clone().arrayBuffer()) : "";
    const call = { url: req.url, method: req.method, headers: Object.fromEntries(req.headers), body };
    calls.push(call);
    return handler(req, body, calls);
  });
  return calls;
}

type EdgeHandler = (req: Request, body: string) => Response | Promise<Response>;

/**
 * A `fakeNetwork` handler that answers only the listed `"METHOD url"` pairs. Any other request
 * rejects its fetch, so a test that scripts nothing still never reaches the real network.
 */
export function answerOnly(routes: Record<string, EdgeHandler>) {
  return (req: Request, body: string): Response | Promise<Response> => {
    const answer = routes[`${req.method} ${req.url}`];
    if (!answer) throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
    return answer(req, body);
  };
}
