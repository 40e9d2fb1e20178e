/**
 * Web chat attachments (docs/channels.md, "Attachments") in a real Chromium against the browser
 * project's shared `wrangler dev` (test/browser/support/shared.ts), with an http agent that is a
 * small server of this file's, told in order:
 *
 *   the page's attach button uploads an image, shown in the tray → sent, it shows in the transcript,
 *   fetched from the service with the session → the fake agent receives it as a `web-attachment:`
 *   reference, which resolves with an operator's key to the same bytes → a PDF is a download →
 *   the widget on a page of another origin attaches and shows an image too → the visitor's person
 *   is erased: the reference answers 404, and the page shows nothing of it.
 *
 * No page may report a CSP violation or a page error.
 */
import { type Server, createServer } from "node:http";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../e2e/harness";
import { pollUntil } from "../e2e/support/poll";
import { pageOpener, visible } from "./support/pages";
import { sharedChromium, sharedServer } from "./support/shared";

/** A 1×1 PNG, so the page has a real image to decode. */
const DOT = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
const PDF = Buffer.from("%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n");
const ROUTE = "att-desk";

let base: string;
let browser: Browser;
let adminKey: string;
let agent: { server: Server; url: string; runs: any[] };
let host: { server: Server; origin: string };
const violations: string[] = [];
const newPage = pageOpener(() => browser, violations, { viewport: { width: 390, height: 780 } });

/** The fake agent: answers each run with how many attachments it carried, and keeps every body. */
async function startAgent(): Promise<{ server: Server; url: string; runs: any[] }> {
  const runs: any[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const run = JSON.parse(body);
      runs.push(run);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ text: `saw ${run.input?.attachments?.length ?? 0} attachment(s)` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return { server, url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/run`, runs };
}

/** A page of another origin (localhost rather than 127.0.0.1) that embeds the widget. */
async function startHost(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body><h1>A shop</h1><script src="${base}/api/channels/web/widget.js" data-identity="${ROUTE}" async></script></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return { server, origin: `http://localhost:${typeof a === "object" && a ? a.port : 0}` };
}

/** Attaches a file with the chat's file input (inside the widget's shadow root too). */
async function attach(page: Page, name: string, mimeType: string, buffer: Buffer): Promise<void> {
  await page.locator('input[type="file"]').setInputFiles({ name, mimeType, buffer });
  await visible(page.locator(".tai-up:not(.tai-busy)").filter({ hasText: name }));
}

/** The width the browser decoded the first image of `scope`'s visitor entries at (0: not loaded). */
async function decodedWidth(page: Page): Promise<number> {
  const img = await visible(page.locator(".tai-entry.tai-visitor .tai-image img"));
  await pollUntil(
    "the image to decode",
    () => img.evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth > 0),
    (ok) => ok,
    { timeoutMs: 15_000 },
  );
  return img.evaluate((i: HTMLImageElement) => i.naturalWidth);
}

beforeAll(async () => {
  [browser, { baseUrl: base, adminKey }] = await Promise.all([sharedChromium(), sharedServer()]);
  agent = await startAgent();
  const declared = await http(base, "POST", "/api/agents-config/entries", {
    key: adminKey,
    body: { title: "att-agent", kind: "http", description: "sees attachments", config: { url: agent.url } },
  });
  expect(declared.status, JSON.stringify(declared.body)).toBe(200);
  expect((await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "att-runner", scopes: ["agent:att-agent"] } })).status).toBe(200);
  const route = await http(base, "POST", `/api/conversations/${ROUTE}`, {
    key: adminKey,
    body: { door: "channel", channel: "web", our_identity: ROUTE, target_kind: "agent", target_name: "att-agent", execution_key: "att-runner" },
  });
  expect(route.status, JSON.stringify(route.body)).toBe(200);
  // A multichannel target: each visitor is a person, which the operator can erase.
  const config = await http(base, "PUT", "/api/conversation-configs/agent/att-agent", {
    key: adminKey,
    body: { target_kind: "agent", target_name: "att-agent", multichannel: true },
  });
  expect(config.status, JSON.stringify(config.body)).toBe(200);
  host = await startHost();
  expect((await http(base, "PUT", `/api/channels/web/sites/${ROUTE}`, { key: adminKey, body: { allowed_origins: [host.origin] } })).status).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  for (const s of [agent?.server, host?.server]) await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
});

describe("attachments in the web chat", () => {
  let page: Page;
  let reference: string;
  let threadId: string;

  it("the page uploads an image, shows it sent, and the fake agent gets a reference that resolves to it", async () => {
    page = (await newPage()).page;
    await page.goto(`${base}/api/channels/web/chat/${ROUTE}`);
    await visible(page.getByRole("heading", { name: "Chat" }));
    await attach(page, "dot.png", "image/png", DOT);
    await visible(page.locator(".tai-up img"));
    // A message of a file alone: the text box may stay empty.
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await visible(page.locator(".tai-entry.tai-bot").filter({ hasText: "saw 1 attachment(s)" }));
    expect(await decodedWidth(page)).toBe(1);
    await expect(page.locator(".tai-up").count()).resolves.toBe(0);

    const run = agent.runs.find((r) => r.input?.attachments?.length);
    expect(run.input.attachments).toEqual([
      { kind: "image", url: expect.stringMatching(new RegExp(`^web-attachment:${ROUTE}/[A-Za-z0-9_-]{43}$`)), filename: "dot.png" },
    ]);
    reference = run.input.attachments[0].url;
    threadId = run.thread_id;
    const id = reference.slice(reference.lastIndexOf("/") + 1);
    const got = await fetch(`${base}/api/conversations/${ROUTE}/attachments/${id}`, { headers: { "x-api-key": adminKey } });
    expect([got.status, got.headers.get("content-type"), got.headers.get("x-content-type-options")]).toEqual([200, "image/png", "nosniff"]);
    expect(Buffer.from(await got.arrayBuffer()).equals(DOT)).toBe(true);
  });

  it("a PDF is offered as a download, never shown as a page", async () => {
    await attach(page, "terms.pdf", "application/pdf", PDF);
    const input = page.getByLabel("Message", { exact: true });
    await input.fill("and the terms");
    await input.press("Enter");
    const file = await visible(page.locator(".tai-entry.tai-visitor button.tai-file").filter({ hasText: "terms.pdf" }));
    const [saved] = await Promise.all([page.waitForEvent("download"), file.click()]);
    expect(saved.suggestedFilename()).toBe("terms.pdf");
  });

  it("the widget on another origin attaches an image and shows it", async () => {
    const { page: shop } = await newPage();
    await shop.goto(host.origin);
    await shop.getByRole("button", { name: /Open chat/ }).click();
    await attach(shop, "dot.png", "image/png", DOT);
    await shop.getByRole("button", { name: "Send", exact: true }).click();
    await visible(shop.locator(".tai-entry.tai-bot").filter({ hasText: "saw 1 attachment(s)" }));
    expect(await decodedWidth(shop)).toBe(1);
  });

  it("erasing the visitor's person deletes the upload: the reference is 404 and the page shows nothing", async () => {
    // The turn's run summary names its person (a multichannel target's turns are the person's).
    const runs = await pollUntil(
      "the run summary of the visitor's turn",
      () => http(base, "GET", `/api/observability/runs?session=${encodeURIComponent(threadId)}`, { key: adminKey }),
      (r) => r.status === 200 && (r.body.data?.items ?? []).length > 0,
    );
    const personId = runs.body.data.items[0].user_id as string;
    const erased = await pollUntil(
      "the erase (no turn in flight)",
      () => http(base, "DELETE", `/api/conversations/persons/${personId}`, { key: adminKey }),
      (r) => r.status !== 409,
    );
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const id = reference.slice(reference.lastIndexOf("/") + 1);
    const gone = await fetch(`${base}/api/conversations/${ROUTE}/attachments/${id}`, { headers: { "x-api-key": adminKey } });
    expect(gone.status).toBe(404);
    await page.reload();
    await visible(page.getByRole("heading", { name: "Chat" }));
    await expect(page.locator(".tai-entry").count()).resolves.toBe(0);
    expect(violations).toEqual([]);
  });
});
