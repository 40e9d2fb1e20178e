/**
 * Signed-in users of a website in the widget (docs/channels.md "Verified visitors", docs/
 * web-channel-client.md "Signed-in users"), in a real Chromium against the browser project's
 * shared `wrangler dev` (test/browser/support/shared.ts), on a host page of another origin that
 * hands the widget its backend's token (`data-user-token`, then `TaiWeb.identify`). Told in order:
 *
 *   one user on two browser contexts sees one conversation, live both ways → a forged token is
 *   refused with a clear state and no session → an expired token is refused the same way, the page
 *   is asked for a fresh one (`tai-web-token-needed`) and the fresh one opens the chat → an
 *   anonymous visitor who signs in is offered to keep their earlier conversation, and keeping it
 *   joins it to their person.
 *
 * No page may report a CSP violation or a page error.
 */
import { createHmac } from "node:crypto";
import { type Server, createServer } from "node:http";
import type { Browser, Page, Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../e2e/harness";
import { pollUntil } from "../e2e/support/poll";
import { type ToolServer, startToolServer } from "../e2e/support/tool-server";
import { pageOpener, visible } from "./support/pages";
import { sharedChromium, sharedServer } from "./support/shared";
import { EN } from "../../src/web-chat/strings/en";

/** This file's names on the shared server: its tool, key, route and web identity. */
const IDENTITY = "verified-desk";
const TOOL = "verified-concierge";

let base: string;
let browser: Browser;
let adminKey: string;
let secret: string;
let tool: ToolServer;
let host: { server: Server; origin: string };
const violations: string[] = [];
const newPage = pageOpener(() => browser, violations, { viewport: { width: 1024, height: 768 } });

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");

/** A token as the site's backend mints it (docs/channels.md "Verified visitors"), signed with `key`. */
function userToken(sub: string, opts: { key?: string; iat?: number; exp?: number } = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const signing = `${b64url({ alg: "HS256", typ: "JWT" })}.${b64url({ sub, iat: opts.iat ?? now, exp: opts.exp ?? now + 600 })}`;
  return `${signing}.${createHmac("sha256", opts.key ?? secret)
    .update(signing)
    .digest("base64url")}`;
}

/** The shop's pages on another origin: `?t=<token>` puts the token on the widget's tag, as a logged-in page would. */
async function startHost(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const token = new URL(req.url ?? "/", "http://x").searchParams.get("t");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>My account</title></head>
<body><h1>My account</h1>
<script src="${base}/api/channels/web/widget.js" data-identity="${IDENTITY}"${token ? ` data-user-token="${token}"` : ""} async></script></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return { server, origin: `http://localhost:${typeof a === "object" && a ? a.port : 0}` };
}

/**
 * A fresh context on the shop's page (signed in with `token`), the widget's panel opened; the
 * widget's `tai-web-token-needed` events are kept, and `session` is the answer to its first
 * `POST session`.
 */
async function shop(token: string | null): Promise<{ page: Page; session: Promise<Response>; close: () => Promise<void> }> {
  const { page, context } = await newPage();
  await context.addInitScript(() => {
    const seen: unknown[] = [];
    (window as unknown as { needed: unknown[] }).needed = seen;
    addEventListener("tai-web-token-needed", (e) => seen.push((e as CustomEvent).detail));
  });
  const session = page.waitForResponse((r) => r.url().endsWith("/api/channels/web/session") && r.request().method() === "POST");
  session.catch(() => undefined);
  await page.goto(token ? `${host.origin}/?t=${encodeURIComponent(token)}` : host.origin);
  await (await visible(page.getByRole("button", { name: /chat/i }))).click();
  return { page, session, close: () => context.close() };
}

const entries = (page: Page, role: string) => page.locator(`.tai-entry.tai-${role}`);
const needed = (page: Page) => page.evaluate(() => (window as unknown as { needed: Array<{ identity: string; reason: string }> }).needed);
const storedTokens = (page: Page) =>
  page.evaluate(() =>
    Object.keys(localStorage)
      .filter((k) => k.startsWith("tai-web:"))
      .map((k) => String(JSON.parse(localStorage.getItem(k) ?? "{}").token)),
  );

async function say(page: Page, text: string): Promise<void> {
  const input = page.getByLabel("Message", { exact: true });
  await input.fill(text);
  await input.press("Enter");
}

beforeAll(async () => {
  [browser, { baseUrl: base, adminKey }] = await Promise.all([sharedChromium(), sharedServer()]);
  tool = await startToolServer((kwargs) => `concierge saw ${kwargs.message}`);
  const ok = (r: { status: number; body: unknown }, what: string) => expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(200);
  ok(await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "verified-runner", scopes: [`tool:${TOOL}`] } }), "key");
  ok(await http(base, "POST", "/api/tools-config/entries", { key: adminKey, body: { title: TOOL, kind: "http", url: tool.url } }), "tool");
  ok(
    await http(base, "POST", `/api/conversations/${IDENTITY}`, {
      key: adminKey,
      body: {
        door: "channel",
        channel: "web",
        our_identity: IDENTITY,
        target_kind: "tool",
        target_name: TOOL,
        execution_key: "verified-runner",
        payload_expr: "{message: .message, person_id: (.person_id // null)}",
      },
    }),
    "route",
  );
  // Persons, so a kept anonymous conversation has a person to join.
  ok(
    await http(base, "PUT", `/api/conversation-configs/tool/${TOOL}`, { key: adminKey, body: { target_kind: "tool", target_name: TOOL, multichannel: true } }),
    "multichannel",
  );
  host = await startHost();
  ok(await http(base, "PUT", `/api/channels/web/sites/${IDENTITY}`, { key: adminKey, body: { allowed_origins: [host.origin] } }), "site");
  const verification = await http(base, "PUT", `/api/channels/web/sites/${IDENTITY}/verification`, { key: adminKey, body: {} });
  ok(verification, "verification");
  secret = verification.body.data.secret;
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (host ? host.server.close(() => resolve()) : resolve()));
  await tool?.stop();
});

describe("a signed-in user in the widget", () => {
  it("on two browser contexts sees one conversation, live both ways", async () => {
    const token = userToken("ada");
    const laptop = await shop(token);
    await say(laptop.page, "hello from the laptop");
    await visible(entries(laptop.page, "bot").filter({ hasText: "concierge saw hello from the laptop" }));
    const phone = await shop(token);
    // The phone opens the same conversation: the laptop's message is there.
    await visible(entries(phone.page, "visitor").filter({ hasText: "hello from the laptop" }));
    await say(phone.page, "hello from the phone");
    // The laptop's open socket gets the phone's message and its answer, live.
    await visible(entries(laptop.page, "visitor").filter({ hasText: "hello from the phone" }));
    await visible(entries(laptop.page, "bot").filter({ hasText: "concierge saw hello from the phone" }));
    await say(laptop.page, "and back to the laptop");
    await visible(entries(phone.page, "visitor").filter({ hasText: "and back to the laptop" }));
    // Two sessions (one per device) on the user's one address; neither offers a new conversation.
    const [a, b] = [(await storedTokens(laptop.page))[0], (await storedTokens(phone.page))[0]];
    expect(a).toMatch(/^u_/);
    expect(b.split(".")[0]).toBe(a.split(".")[0]);
    expect(b).not.toBe(a);
    for (const p of [laptop.page, phone.page]) expect(await p.getByRole("button", { name: "New conversation" }).isVisible()).toBe(false);
    await laptop.close();
    await phone.close();
  });

  it("a forged token is refused: a clear state, the page asked for a token, and no session", async () => {
    const { page, session, close } = await shop(userToken("mallory", { key: "tws_not-the-secret" }));
    // The service refused it before minting anything (the host origin is allowed, so the page sees why).
    const answer = await session;
    expect([answer.status(), (await answer.json()).code]).toEqual([401, "user_unverified"]);
    await visible(page.locator(".tai-status").filter({ hasText: EN["identify.user_unverified"] }));
    expect(await needed(page)).toEqual([{ identity: IDENTITY, reason: "user_unverified" }]);
    expect(await storedTokens(page)).toEqual([]);
    expect(await entries(page, "visitor").count()).toBe(0);
    await close();
  });

  it("an expired token is refused the same way; the page's fresh token then opens the chat", async () => {
    const now = Math.floor(Date.now() / 1000);
    const { page, session, close } = await shop(userToken("lin", { iat: now - 4000, exp: now - 600 }));
    const answer = await session;
    expect([answer.status(), (await answer.json()).code]).toEqual([401, "user_token_expired"]);
    await visible(page.locator(".tai-status").filter({ hasText: EN["identify.user_token_expired"] }));
    expect(await needed(page)).toEqual([{ identity: IDENTITY, reason: "user_token_expired" }]);
    expect(await storedTokens(page)).toEqual([]);
    // What a page does on `tai-web-token-needed`: asks its backend and hands the widget the new token.
    await page.evaluate((fresh) => (window as unknown as { TaiWeb: { identify(t: string): void } }).TaiWeb.identify(fresh), userToken("lin"));
    await say(page, "signed in again");
    await visible(entries(page, "bot").filter({ hasText: "concierge saw signed in again" }));
    expect((await storedTokens(page))[0]).toMatch(/^u_/);
    await close();
  });

  it("an anonymous visitor who signs in is offered to keep the earlier conversation; keeping it joins their person", async () => {
    const { page, close } = await shop(null);
    await say(page, "before signing in");
    await visible(entries(page, "bot").filter({ hasText: "concierge saw before signing in" }));
    const anonymous = (await storedTokens(page))[0].split(".")[0];
    expect(anonymous).toMatch(/^w_/);
    // The site's login: the page hands the widget its user's token.
    await page.evaluate((t) => (window as unknown as { TaiWeb: { identify(t: string): void } }).TaiWeb.identify(t), userToken("grace"));
    await visible(page.getByText(EN["merge.offer"]));
    // Nothing is joined before the visitor chooses.
    await say(page, "signed in now");
    await visible(entries(page, "bot").filter({ hasText: "concierge saw signed in now" }));
    const before = tool.calls.find((c) => c.kwargs.message === "signed in now")?.kwargs.person_id;
    const alone = await http(base, "GET", `/api/conversations/persons/${before}`, { key: adminKey });
    expect(alone.body.data.addresses.map((a: { address: string }) => a.address)).not.toContain(anonymous);
    await page.getByRole("button", { name: EN["merge.keep"], exact: true }).click();
    await visible(page.locator(".tai-status").filter({ hasText: EN["merge.done"] }));
    await say(page, "is it kept?");
    await visible(entries(page, "bot").filter({ hasText: "concierge saw is it kept?" }));
    const personId = tool.calls.find((c) => c.kwargs.message === "is it kept?")?.kwargs.person_id;
    const person = await pollUntil(
      "the signed-in person holding the anonymous address",
      () => http(base, "GET", `/api/conversations/persons/${personId}`, { key: adminKey }),
      (r) => r.status === 200 && r.body.data.addresses.some((a: { address: string }) => a.address === anonymous),
    );
    expect(person.body.data.addresses.map((a: { channel: string }) => a.channel)).toEqual(["web", "web"]);
    await close();
  });

  it("saw no CSP violation and no page error", () => {
    expect(violations).toEqual([]);
  });
});
