/**
 * The web channel's chat page and widget in a real Chromium against a real `wrangler dev`
 * (docs/channels.md "Web"), the browser project's shared ones (test/browser/support/shared.ts),
 * told in order:
 *
 *   open the page, send, see the answer streamed → reload and see the transcript once → a new
 *   conversation → an operator takes over and a hand-typed reply appears live → options tapped as
 *   chips → the widget on a page of another origin, refused until that origin is allowed → an
 *   ask_user chip tapped → link params reaching a tool's payload → a pairing link joining a WhatsApp
 *   person → a gated identity refused without a code and admitted with one.
 *
 * No page may report a CSP violation or a page error.
 */
import { createHmac } from "node:crypto";
import { type Server, createServer } from "node:http";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, http } from "../e2e/harness";
import { pollUntil } from "../e2e/support/poll";
import { type ToolServer, startToolServer } from "../e2e/support/tool-server";
import { pageOpener, visible } from "./support/pages";
import { type SharedProviders, sharedChromium, sharedProviders, sharedServer } from "./support/shared";
import { SHARED_WHATSAPP } from "./support/shared-vars";
import { must } from "../../src/platform/must";

const SHOTS = process.env.UPDATE_SCREENSHOTS === "1" ? join(ROOT, "docs", "web") : mkdtempSync(join(tmpdir(), "webchat-shots-"));

let base: string;
let browser: Browser;
let adminKey: string;
let host: { server: Server; origin: string };
let fake: SharedProviders;
let tool: ToolServer;
/** This file's WhatsApp number (the route's identity) on the shared server's WhatsApp app. */
const WHATSAPP_NUMBER = "pn-webchat";
/** The concierge tool sees the message, the link params and the person (the default kwargs carry neither). */
const CONCIERGE_PAYLOAD = "{message: .message, params: (.params // null), person_id: (.person_id // null)}";
const violations: string[] = [];

const newPage = pageOpener(() => browser, violations, { viewport: { width: 390, height: 780 } });

const entries = (page: Page | Locator, role: string) => page.locator(`.tai-entry.tai-${role}`);

async function say(page: Page | Locator, text: string): Promise<void> {
  const input = page.getByLabel("Message", { exact: true });
  await input.fill(text);
  await input.press("Enter");
}

/** A page of another origin (localhost rather than 127.0.0.1) that embeds the widget. */
async function startHost(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body><h1>A shop on another origin</h1>
<script src="${base}/api/channels/web/widget.js" data-identity="desk" async></script></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return { server, origin: `http://localhost:${typeof a === "object" && a ? a.port : 0}` };
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  [browser, { baseUrl: base, adminKey }, fake] = await Promise.all([sharedChromium(), sharedServer(), sharedProviders()]);
  tool = await startToolServer((kwargs) => `concierge saw ${kwargs.message} with ${JSON.stringify(kwargs.params ?? null)}`);
  expect(
    (
      await http(base, "POST", "/api/auth/api-keys", {
        key: adminKey,
        body: { user_id: "web-runner", scopes: ["tool:echo", "tool:ask_user", "tool:concierge"] },
      })
    ).status,
  ).toBe(200);
  expect((await http(base, "POST", "/api/tools-config/entries", { key: adminKey, body: { title: "concierge", kind: "http", url: tool.url } })).status).toBe(
    200,
  );
  for (const [name, identity] of [
    ["desk", "desk"],
    ["vip", "vip"],
  ]) {
    const r = await http(base, "POST", `/api/conversations/${name}`, {
      key: adminKey,
      body: { door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: "echo", execution_key: "web-runner" },
    });
    expect(r.status).toBe(200);
  }
  const more: Array<[string, Record<string, unknown>]> = [
    ["shop", { channel: "web", our_identity: "shop", target_name: "concierge", payload_expr: CONCIERGE_PAYLOAD }],
    ["wa", { channel: "whatsapp", our_identity: WHATSAPP_NUMBER, target_name: "concierge", payload_expr: CONCIERGE_PAYLOAD }],
    [
      "approvals",
      {
        channel: "web",
        our_identity: "approvals",
        target_name: "ask_user",
        payload_expr: '{question: .message, options: [{text: "Approve", id: "approve"}, {text: "Reject", id: "reject"}]}',
        reply_expr: 'if .outcome == "answered" then "Decision: " + (.answer.option.text // .answer.text) else "No decision" end',
      },
    ],
  ];
  for (const [name, body] of more) {
    const r = await http(base, "POST", `/api/conversations/${name}`, {
      key: adminKey,
      body: { door: "channel", target_kind: "tool", execution_key: "web-runner", ...body },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }
  const multichannel = await http(base, "PUT", "/api/conversation-configs/tool/concierge", {
    key: adminKey,
    body: { target_kind: "tool", target_name: "concierge", multichannel: true },
  });
  expect(multichannel.status).toBe(200);
  host = await startHost();
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (host ? host.server.close(() => resolve()) : resolve()));
  fake?.close();
  await tool?.stop();
  // The screenshots of a plain run are scratch (UPDATE_SCREENSHOTS writes the docs' own instead).
  if (process.env.UPDATE_SCREENSHOTS !== "1") rmSync(SHOTS, { recursive: true, force: true });
});

describe("the web chat page in Chromium", () => {
  let visitor: { context: BrowserContext; page: Page };

  it("opens, sends, and shows the answer streamed in", async () => {
    visitor = await newPage();
    const { page } = visitor;
    await page.goto(`${base}/api/channels/web/chat/desk`);
    await visible(page.getByRole("heading", { name: "Chat" }));
    await say(page, "hello from the page");
    await visible(entries(page, "bot").filter({ hasText: "hello from the page" }));
    await page.screenshot({ path: join(SHOTS, "page.png") });
    const cookies = await visitor.context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: "tai_web_desk", httpOnly: true, sameSite: "Lax", path: "/api/channels/web/" });
  });

  it("reloads and shows the transcript once", async () => {
    const { page } = visitor;
    await page.reload();
    await visible(entries(page, "bot").filter({ hasText: "hello from the page" }));
    await page.waitForTimeout(500);
    expect(await entries(page, "visitor").count()).toBe(1);
    expect(await entries(page, "bot").count()).toBe(1);
  });

  it("starts a new conversation on a fresh address", async () => {
    const { page, context } = visitor;
    const before = (await context.cookies())[0].value;
    await page.getByRole("button", { name: "New conversation" }).click();
    await pollUntil(
      "an emptied transcript",
      () => entries(page, "visitor").count(),
      (n) => n === 0,
    );
    const after = (await context.cookies())[0].value;
    expect(after).not.toBe(before);
    await say(page, "second conversation");
    await visible(entries(page, "bot").filter({ hasText: "second conversation" }));
  });

  it("shows an operator's hand-typed reply live after a takeover, and options as chips a tap answers with", async () => {
    const { page, context } = visitor;
    const visitorId = (await context.cookies())[0].value.split(".")[0];
    const threadId = `bridge:desk:${visitorId}`;
    const mode = await http(base, "PUT", "/api/conversations/desk/thread/mode", { key: adminKey, body: { thread_id: threadId, mode: "manual" } });
    expect(mode.status).toBe(200);
    const sent = await http(base, "POST", "/api/conversations/desk/thread/messages", {
      key: adminKey,
      body: {
        thread_id: threadId,
        text: "Hi, a person here. Which plan?",
        options: [
          { text: "Basic", id: "basic", kind: "reply" },
          { text: "Pro", id: "pro", kind: "reply" },
        ],
      },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await visible(entries(page, "operator").filter({ hasText: "Hi, a person here." }));
    await (await visible(page.getByRole("button", { name: "Pro", exact: true }))).click();
    await visible(entries(page, "visitor").filter({ hasText: "Pro" }));
    // In manual mode no turn runs: the tap reached the thread as the visitor's message.
    const transcript = await pollUntil(
      "the tapped option in the transcript",
      async () => (await http(base, "GET", `/api/conversations/desk/transcript?thread_id=${encodeURIComponent(threadId)}`, { key: adminKey })).body.data.items,
      (items: any[]) => items.some((i) => i.inbound_text === "Pro"),
    );
    expect(transcript.length).toBeGreaterThan(1);
  });

  it("is usable at 360 px and in dark mode", async () => {
    const narrow = await newPage({ viewport: { width: 360, height: 740 }, colorScheme: "dark" });
    await narrow.page.goto(`${base}/api/channels/web/chat/desk`);
    const input = await visible(narrow.page.getByLabel("Message", { exact: true }));
    const box = await input.boundingBox();
    const shown = must(box, "the bounding box");
    expect(shown.x + shown.width).toBeLessThanOrEqual(360);
    const bg = await narrow.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).not.toBe("rgb(255, 255, 255)");
    await narrow.page.screenshot({ path: join(SHOTS, "page-dark-360.png") });
    await narrow.context.close();
  });
});

describe("the widget on another origin", () => {
  it("is refused until the operator allows that origin, then chats", async () => {
    const { page, context } = await newPage({ viewport: { width: 1024, height: 768 } });
    // The refusal carries no Access-Control-Allow-Origin: the browser keeps even its status from
    // the foreign page, which sees a failed request and no session.
    const refused = page.waitForEvent("requestfailed", (r) => r.url().endsWith("/api/channels/web/session") && r.method() === "POST");
    await page.goto(host.origin);
    await (await visible(page.getByRole("button", { name: /chat/i }))).click();
    expect((await refused).failure()?.errorText).toBe("net::ERR_FAILED");
    expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("tai-web:")))).toEqual([]);
    await context.close();

    const allowed = await http(base, "PUT", "/api/channels/web/sites/desk", { key: adminKey, body: { allowed_origins: [host.origin] } });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    const second = await newPage({ viewport: { width: 1024, height: 768 } });
    // A token an earlier widget kept under the identity alone may be another service's: it is
    // never sent, and it is removed.
    const LEGACY = `w_${"L".repeat(22)}.${"l".repeat(43)}`;
    await second.context.addInitScript((token) => {
      if (!sessionStorage.getItem("seeded")) {
        localStorage.setItem("tai-web:desk", JSON.stringify({ token }));
        sessionStorage.setItem("seeded", "1");
      }
    }, LEGACY);
    const bearers: string[] = [];
    second.page.on("request", (r) => {
      const auth = r.headers().authorization;
      if (auth) bearers.push(auth);
    });
    await second.page.goto(host.origin);
    await (await visible(second.page.getByRole("button", { name: /chat/i }))).click();
    await say(second.page.locator("body"), "hello from the widget");
    await visible(second.page.locator(".tai-entry.tai-bot").filter({ hasText: "hello from the widget" }));
    await second.page.screenshot({ path: join(SHOTS, "widget.png") });
    // The token is kept under the service's origin and the identity.
    expect(await second.page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("tai-web:")))).toEqual([`tai-web:${base}/desk`]);
    expect(bearers.length).toBeGreaterThan(0);
    expect(bearers.some((b) => b.includes(LEGACY))).toBe(false);
    // No cookie of the service on the host page: the widget's credential is its bearer token.
    expect((await second.context.cookies()).filter((c) => c.name.startsWith("tai_web_"))).toEqual([]);
    await second.context.close();
  });
});

describe("turns that need more than an echo", () => {
  it("an ask_user question shows its options as chips, and a tap answers it", async () => {
    const { page, context } = await newPage();
    await page.goto(`${base}/api/channels/web/chat/approvals`);
    await say(page, "Refund 40 EUR?");
    await visible(entries(page, "bot").filter({ hasText: "Refund 40 EUR?" }));
    await (await visible(page.getByRole("button", { name: "Approve", exact: true }))).click();
    await visible(entries(page, "bot").filter({ hasText: "Decision: Approve" }));
    await context.close();
  });

  it("the page's link params reach the tool's payload", async () => {
    const { page, context } = await newPage();
    await page.goto(`${base}/api/channels/web/chat/shop?campaign=spring&tai_entry=ignored`);
    await say(page, "what is on offer?");
    await visible(entries(page, "bot").filter({ hasText: "concierge saw what is on offer?" }));
    const call = tool.calls.find((c) => c.kwargs.message === "what is on offer?");
    expect(call?.kwargs.params).toEqual({ campaign: "spring" });
    await context.close();
  });

  it("a pairing link links the web visitor to the person a WhatsApp chat asked for", async () => {
    const chat = "4915550777001";
    const whatsapp = (messageId: number, text: string) => {
      const value = {
        metadata: { phone_number_id: WHATSAPP_NUMBER },
        messages: [{ from: chat, id: `wamid.webchat${messageId}`, type: "text", text: { body: text } }],
      };
      const body = JSON.stringify({ object: "whatsapp_business_account", entry: [{ id: "w", changes: [{ field: "messages", value }] }] });
      const signature = `sha256=${createHmac("sha256", SHARED_WHATSAPP.appSecret).update(body).digest("hex")}`;
      return fetch(`${base}/api/channels/whatsapp/inbound`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-hub-signature-256": signature },
        body,
      });
    };
    expect((await whatsapp(9001, "hello")).status).toBe(200);
    expect((await whatsapp(9002, "/link")).status).toBe(200);
    const minted = await pollUntil(
      "the pairing code sent to WhatsApp",
      () => fake.sends.filter((x) => x.channel === "whatsapp" && x.body.to === chat).map((x) => String(x.body.text?.body ?? "")),
      (texts) => texts.some((t) => /LINK-[A-Z0-9]{8}/.test(t)),
    );
    const code = must(
      must(
        minted.find((t) => /LINK-[A-Z0-9]{8}/.test(t)),
        "the item found",
      ).match(/LINK-[A-Z0-9]{8}/),
      "the match",
    )[0];
    const { page, context } = await newPage();
    await page.goto(`${base}/api/channels/web/chat/shop?tai_pair=${code}`);
    // The page door redeems nothing: the page offers the code, leaves the address bar clean, and
    // only the visitor's "Link" sends it (as their message, a same-origin POST).
    await visible(page.getByRole("group", { name: "Pairing link" }));
    expect(new URL(page.url()).searchParams.has("tai_pair")).toBe(false);
    await page.getByRole("button", { name: "Link", exact: true }).click();
    await visible(entries(page, "bot").filter({ hasText: "Done — this conversation is now linked to your other one." }));
    expect(await page.getByRole("group", { name: "Pairing link" }).count()).toBe(0);
    await say(page, "it is me");
    await visible(entries(page, "bot").filter({ hasText: "concierge saw it is me" }));
    const call = tool.calls.find((c) => c.kwargs.message === "it is me");
    const person = await http(base, "GET", `/api/conversations/persons/${call?.kwargs.person_id}`, { key: adminKey });
    expect(person.status).toBe(200);
    expect(person.body.data.addresses.map((a: any) => a.channel).sort()).toEqual(["web", "whatsapp"]);
    await context.close();
  });
});

describe("an entry gate", () => {
  it("refuses a page without a live code and admits one with it", async () => {
    expect((await http(base, "PUT", "/api/channels/web/gates/vip", { key: adminKey, body: { enabled: true } })).status).toBe(200);
    const code = await http(base, "POST", "/api/channels/web/gates/vip/codes", { key: adminKey, body: { label: "browser test" } });
    expect(code.status).toBe(201);
    const { page, context } = await newPage();
    const refused = await page.goto(`${base}/api/channels/web/chat/vip`);
    expect(must(refused, "refused").status()).toBe(403);
    expect(await context.cookies()).toEqual([]);
    const admitted = await page.goto(`${base}/api/channels/web/chat/vip?tai_entry=${encodeURIComponent(code.body.data.code)}`);
    expect(must(admitted, "admitted").status()).toBe(200);
    await say(page, "let me in");
    await visible(entries(page, "bot").filter({ hasText: "let me in" }));
    await context.close();
  });

  it("saw no CSP violation and no page error", () => {
    expect(violations).toEqual([]);
  });
});
