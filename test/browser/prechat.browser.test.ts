/**
 * The pre-chat form (docs/channels.md, "Pre-chat form") in a real Chromium against the browser
 * project's shared `wrangler dev`, told in order:
 *
 *   the chat page shows the form before the first message, with the message box locked → its
 *   answers reach the turn: an HTTP tool sees them as the visitor's `profile`, and the page shows
 *   them as the visitor's first message → a later message carries them too → a reload does not ask
 *   again → the widget on another origin asks the same form (from the config door) and its answers
 *   reach the tool.
 *
 * No page may report a CSP violation or a page error.
 */
import { type Server, createServer } from "node:http";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../e2e/harness";
import { pollUntil } from "../e2e/support/poll";
import { type ToolServer, startToolServer } from "../e2e/support/tool-server";
import { pageOpener, visible } from "./support/pages";
import { sharedChromium, sharedServer } from "./support/shared";

let base: string;
let browser: Browser;
let adminKey: string;
let tool: ToolServer;
let host: { server: Server; origin: string };
const violations: string[] = [];
const newPage = pageOpener(() => browser, violations, { viewport: { width: 390, height: 780 } });

/** The tool sees the message and the profile (the default kwargs carry neither). */
const PAYLOAD = "{message: .message, profile: (.profile // null)}";
const FORM = {
  fields: [
    { name: "name", label: "Your name", type: "text", required: true },
    { name: "email", label: "Email", type: "email", required: true },
    { name: "topic", label: "Topic", type: "enum", options: ["Billing", "Orders"], required: true },
    { name: "newsletter", label: "Send me news", type: "boolean" },
  ],
};

const entries = (page: Page | Locator, role: string) => page.locator(`.tai-entry.tai-${role}`);
const profilesSeen = () => tool.calls.map((c) => c.kwargs.profile);

/** A page of another origin (localhost rather than 127.0.0.1) that embeds this file's widget. */
async function startHost(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Clinic</title></head>
<body><h1>A clinic on another origin</h1>
<script src="${base}/api/channels/web/widget.js" data-identity="prechat-widget" async></script></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return { server, origin: `http://localhost:${typeof a === "object" && a ? a.port : 0}` };
}

/** Fills the form inside `scope` and starts the chat. */
async function fillForm(scope: Page | Locator, name: string): Promise<void> {
  await (await visible(scope.getByLabel("Your name", { exact: true }))).fill(name);
  await scope.getByLabel("Email", { exact: true }).fill(`${name.toLowerCase()}@example.com`);
  await scope.getByLabel("Topic", { exact: true }).selectOption("Orders");
  await scope.getByLabel("Send me news", { exact: true }).check();
  await scope.getByRole("button", { name: "Start chat", exact: true }).click();
}

beforeAll(async () => {
  [browser, { baseUrl: base, adminKey }] = await Promise.all([sharedChromium(), sharedServer()]);
  tool = await startToolServer((kwargs) => `desk saw ${kwargs.profile ? kwargs.profile.fields.name : "no profile"}: ${kwargs.message}`);
  const key = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "prechat-runner", scopes: ["tool:prechat-desk"] } });
  expect(key.status).toBe(200);
  const declared = await http(base, "POST", "/api/tools-config/entries", { key: adminKey, body: { title: "prechat-desk", kind: "http", url: tool.url } });
  expect(declared.status, JSON.stringify(declared.body)).toBe(200);
  host = await startHost();
  for (const identity of ["prechat-page", "prechat-widget"]) {
    const route = await http(base, "POST", `/api/conversations/${identity}`, {
      key: adminKey,
      body: {
        door: "channel",
        channel: "web",
        our_identity: identity,
        target_kind: "tool",
        target_name: "prechat-desk",
        execution_key: "prechat-runner",
        payload_expr: PAYLOAD,
      },
    });
    expect(route.status, JSON.stringify(route.body)).toBe(200);
    const form = await http(base, "PUT", `/api/channels/web/sites/${identity}/prechat`, { key: adminKey, body: FORM });
    expect(form.status, JSON.stringify(form.body)).toBe(200);
  }
  const allowed = await http(base, "PUT", "/api/channels/web/sites/prechat-widget", { key: adminKey, body: { allowed_origins: [host.origin] } });
  expect(allowed.status).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (host ? host.server.close(() => resolve()) : resolve()));
  await tool?.stop();
});

describe("the pre-chat form in Chromium", () => {
  it("the page asks before the first message, and the answers reach the turn as the visitor's profile", async () => {
    const { page, context } = await newPage();
    await page.goto(`${base}/api/channels/web/chat/prechat-page`);
    await visible(page.getByText("Before we start, please tell us a little about yourself."));
    // The message box waits for the form.
    expect(await page.getByLabel("Message", { exact: true }).isDisabled()).toBe(true);
    await fillForm(page, "Ada");
    const first = "Your name: Ada\nEmail: ada@example.com\nTopic: Orders\nSend me news: true";
    await visible(entries(page, "bot").filter({ hasText: "desk saw Ada: Your name: Ada" }), 20_000);
    expect(await entries(page, "visitor").first().textContent()).toContain("Email: ada@example.com");
    const profile = { fields: { name: "Ada", email: "ada@example.com", topic: "Orders", newsletter: true }, verified: [] };
    expect(tool.calls.find((c) => c.kwargs.profile?.fields.name === "Ada")?.kwargs).toEqual({ message: first, profile });

    // The form is gone and the message box open; a later message carries the profile too.
    expect(await page.getByLabel("Your name", { exact: true }).count()).toBe(0);
    const input = page.getByLabel("Message", { exact: true });
    await input.fill("Where is my parcel?");
    await input.press("Enter");
    await visible(entries(page, "bot").filter({ hasText: "desk saw Ada: Where is my parcel?" }), 20_000);
    expect(tool.calls.find((c) => c.kwargs.message === "Where is my parcel?")?.kwargs.profile).toEqual(profile);

    // A reload shows the conversation and asks nothing again.
    await page.reload();
    await visible(entries(page, "bot").filter({ hasText: "Where is my parcel?" }), 20_000);
    await page.waitForTimeout(500);
    expect(await page.getByLabel("Your name", { exact: true }).count()).toBe(0);
    expect(await page.getByLabel("Message", { exact: true }).isDisabled()).toBe(false);
    await context.close();
  });

  it("the widget on another origin asks the same form and its answers reach the tool", async () => {
    const { page, context } = await newPage({ viewport: { width: 1024, height: 768 } });
    await page.goto(host.origin);
    await (await visible(page.getByRole("button", { name: /chat/i }))).click();
    await fillForm(page.locator("body"), "Grace");
    await visible(page.locator(".tai-entry.tai-bot").filter({ hasText: "desk saw Grace: Your name: Grace" }), 20_000);
    await pollUntil(
      "the widget's answers at the tool",
      async () => profilesSeen(),
      (seen) => seen.some((p) => p?.fields.name === "Grace" && p.fields.topic === "Orders" && p.fields.newsletter === true),
    );
    await context.close();
    expect(violations).toEqual([]);
  });
});
