import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, expect, it } from "vitest";
const server = setupServer(http.post("https://tool.example/x", async ({ request }) => HttpResponse.json({ got: await request.json() })));
beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
afterAll(() => server.close());
it("msw intercepts fetch", async () => {
  const r = await fetch("https://tool.example/x", { method: "POST", body: JSON.stringify({ a: 1 }) });
  expect(await r.json()).toEqual({ got: { a: 1 } });
  const f = (i: RequestInfo, init?: RequestInit) => globalThis.fetch(i, init);
  const r2 = await f("https://tool.example/x", { method: "POST", body: "{}" });
  expect(r2.status).toBe(200);
});
