/**
 * The operator console in a real Chromium against a real `wrangler dev` (docs/console.md), the
 * browser project's shared ones (test/browser/support/shared.ts), told in order:
 *
 *   sign-in by keyboard (the key never in a URL or a cookie) → a new inbound appears live, before
 *   any re-read of the listing → takeover of a Telegram thread, an operator reply reaching the fake
 *   Telegram API, hand back → a failed delivery listed with its reason, leading to its thread →
 *   a narrow key sees no control that would answer 403 → a claim link signs a new key in →
 *   operations (runs, a trace, pending interactions, notifications) → a phone-sized and a dark
 *   screen → the API reference under its CSP.
 *
 * No page may report a CSP violation. Screenshots of the main screens are taken on every run;
 * `npm run screenshots` (UPDATE_SCREENSHOTS=1) writes them to docs/console/ for the README.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, freePort, http } from "../e2e/harness";
import { pollUntil } from "../e2e/support/poll";
import { consoleSignIn, pageOpener, visible } from "./support/pages";
import { type SharedProviders, sharedChromium, sharedProviders, sharedServer } from "./support/shared";
import { SHARED_TELEGRAM as TELEGRAM } from "./support/shared-vars";

const SHOTS = process.env.UPDATE_SCREENSHOTS === "1" ? join(ROOT, "docs", "console") : mkdtempSync(join(tmpdir(), "console-shots-"));
const DESKTOP = { width: 1280, height: 800 };

let base: string;
let fake: SharedProviders;
let browser: Browser;
let adminKey: string;
let admin: { context: BrowserContext; page: Page };
/** Content Security Policy reports and page errors seen by any page. */
const violations: string[] = [];

const newPage = pageOpener(() => browser, violations, { viewport: DESKTOP });

async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage, animations: "disabled" });
}

const signIn = consoleSignIn(() => base);

function telegramInbound(chat: number, updateId: number, text: string) {
  const body = JSON.stringify({
    update_id: updateId,
    message: { message_id: updateId, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "T" }, text },
  });
  return fetch(`${base}/api/channels/telegram/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": TELEGRAM.secret },
    body,
  });
}

const threadHash = (route: string, threadId: string) => `#/conversations/${encodeURIComponent(route)}/${encodeURIComponent(threadId)}`;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  // The shared server's Telegram bot is this file's (route `support`), and its deliveries fail for
  // good at the first attempt (test/browser/support/shared-vars.ts).
  [browser, { baseUrl: base, adminKey }, fake] = await Promise.all([sharedChromium(), sharedServer(), sharedProviders()]);
  // A callback nobody listens on: its route's answers fail for good at the first attempt.
  const closedPort = await freePort();
  const runner = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "console-runner", scopes: ["tool:echo"] } });
  expect(runner.status).toBe(200);
  const route = (name: string, body: Record<string, unknown>) =>
    http(base, "POST", `/api/conversations/${name}`, {
      key: adminKey,
      body: { target_kind: "tool", target_name: "echo", execution_key: "console-runner", ...body },
    });
  expect((await route("support", { door: "channel", channel: "telegram", our_identity: "424242" })).status).toBe(200);
  expect((await route("web", { door: "api" })).status).toBe(200);
  expect((await route("billing", { door: "api", callback_url: `https://127.0.0.1:${closedPort}/hook` })).status).toBe(200);
  admin = await newPage();
});

afterAll(async () => {
  await browser?.close();
  fake?.close();
  // The screenshots of a plain run are scratch (UPDATE_SCREENSHOTS writes the docs' own instead).
  if (process.env.UPDATE_SCREENSHOTS !== "1") rmSync(SHOTS, { recursive: true, force: true });
});

describe("the operator console in Chromium", () => {
  it("signs in by keyboard with a pasted key, which stays out of URLs and cookies", async () => {
    const { page, context } = admin;
    await page.goto(`${base}/console/`);
    const keyInput = await visible(page.getByLabel("API key", { exact: true }));
    await shot(page, "sign-in");
    // Focus starts in the key field; typing and Enter sign in, no mouse needed.
    expect(await keyInput.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.type(adminKey);
    await page.keyboard.press("Enter");
    await visible(page.locator("#who").filter({ hasText: "Signed in as root (admin)" }));
    // The first screen is the inbox (test/browser/inbox.browser.test.ts); the routes are a link away.
    await visible(page.getByRole("heading", { name: "Inbox", exact: true }));
    await page.getByRole("link", { name: "Conversations" }).click();
    await visible(page.getByRole("link", { name: "web" }));
    expect(page.url()).not.toContain(adminKey);
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate(() => sessionStorage.getItem("console.api-key"))).toBe(adminKey);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    // A reload keeps the tab signed in; a wrong key is refused with the API's message.
    await page.reload();
    await visible(page.locator("#who").filter({ hasText: "Signed in as root" }));
    const stranger = await newPage();
    await stranger.page.goto(`${base}/console/`);
    await stranger.page.getByLabel("API key", { exact: true }).fill("sk-not-a-real-key");
    await stranger.page.getByRole("button", { name: "Sign in", exact: true }).click();
    await visible(stranger.page.getByRole("alert").filter({ hasText: "Unauthorized (HTTP 401)" }));
    await stranger.context.close();
  });

  it("shows a new inbound live, before any re-read of the thread listing, and its transcript updates in place", async () => {
    const { page } = admin;
    await page.goto(`${base}/console/#/conversations/web`);
    await visible(page.getByText("● Live"));
    await visible(page.getByText("No threads yet."));
    const threadId = "bridge:web:root/dana";
    // In the page's own clock: when the row appears, and every read of the listing.
    await page.evaluate((id) => {
      const w = window as unknown as { appeared: Promise<number>; sentAt: number };
      w.appeared = new Promise((resolve) => {
        const seen = () => document.querySelector(`a[data-thread="${CSS.escape(id)}"]`) !== null;
        const obs = new MutationObserver(() => {
          if (seen()) {
            obs.disconnect();
            resolve(performance.now());
          }
        });
        obs.observe(document.body, { subtree: true, childList: true });
      });
      w.sentAt = performance.now();
    }, threadId);
    const sent = await http(base, "POST", "/api/conversations/web/messages", { key: adminKey, body: { external_user_id: "dana", text: "hello from dana" } });
    expect(sent.status).toBe(202);
    expect(sent.body.data.thread_id).toBe(threadId);
    const row = await visible(page.locator(`a[data-thread="${threadId}"]`), 10_000);
    const timing = await page.evaluate(async () => {
      const w = window as unknown as { appeared: Promise<number>; sentAt: number };
      const appeared = await w.appeared;
      const listReads = performance
        .getEntriesByType("resource")
        .filter((e) => e.name.includes("/threads"))
        .map((e) => e.startTime);
      return { sentAt: w.sentAt, appeared, listReads };
    });
    // The row came from the socket: no listing read happened between the send and its arrival.
    expect(timing.listReads.filter((t) => t > timing.sentAt && t < timing.appeared)).toEqual([]);
    console.log(`console live arrival: ${Math.round(timing.appeared - timing.sentAt)} ms after the send was issued`);
    await row.click();
    await visible(page.locator(".transcript").getByText("hello from dana"));
    // The open thread's transcript takes the next message without a reload.
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    await http(base, "POST", "/api/conversations/web/messages", { key: adminKey, body: { external_user_id: "dana", text: "and a second line" } });
    await visible(page.locator(".transcript").getByText("and a second line"), 10_000);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42);
    // An api route offers no rich parts (no channel advertises them there).
    expect(await page.getByText("Rich parts").count()).toBe(0);
    // The listing caught up: the row the socket put there is now the listing's own.
    await page.locator(".thread-list li.fresh").first().waitFor({ state: "detached", timeout: 10_000 });
    await visible(page.locator(`a[data-thread="${threadId}"]`).getByText("2 msg"));
    await shot(page, "conversations");
  });

  it("takes over a Telegram thread, replies through the fake Telegram API and hands back", async () => {
    const { page } = admin;
    expect((await telegramInbound(777, 5001, "hi from telegram")).status).toBe(200);
    const threadId = "bridge:support:777";
    await pollUntil(
      "the echo answer",
      () => fake.sends.filter((s) => s.channel === "telegram"),
      (s) => s.some((x) => x.body.text === "hi from telegram"),
    );
    await page.goto(`${base}/console/${threadHash("support", threadId)}`);
    await visible(page.locator(".transcript").getByText("hi from telegram"));
    await visible(page.getByText("Agent (the target answers)"));
    // Telegram advertises rich parts, so the reply box offers them.
    await visible(page.getByText("Rich parts (telegram)"));
    const takeOver = await visible(page.getByRole("button", { name: "Take over" }));
    await takeOver.focus();
    await page.keyboard.press("Enter");
    await visible(page.getByText("Manual (an operator answers)"));
    await visible(page.getByText("set on this thread"));
    const mode = await http(base, "GET", `/api/conversations/support/thread/mode?thread_id=${encodeURIComponent(threadId)}`, { key: adminKey });
    expect(mode.body.data).toEqual({ mode: "manual", source: "thread" });

    await page.getByLabel("Message", { exact: true }).fill("An operator here: how can I help?");
    await page.getByRole("button", { name: "Send reply" }).click();
    const send = await pollUntil(
      "the operator's reply at the provider",
      () => fake.sends.filter((s) => s.channel === "telegram" && s.body.text === "An operator here: how can I help?"),
      (s) => s.length === 1,
    );
    expect(send[0].path).toBe(`/telegram/bot${TELEGRAM.token}/sendMessage`);
    expect(send[0].body.chat_id).toBe("777");
    const mine = await visible(page.locator(".transcript li.operator").filter({ hasText: "An operator here" }));
    expect(await mine.getByText("Operator message").count()).toBe(1);
    await shot(page, "thread");

    await page.getByRole("button", { name: "Hand back" }).click();
    await visible(page.getByText("Agent (the target answers)"));
    const back = await http(base, "GET", `/api/conversations/support/thread/mode?thread_id=${encodeURIComponent(threadId)}`, { key: adminKey });
    expect(back.body.data.mode).toBe("agent");
  });

  it("lists a failed delivery with its reason and leads to its thread", async () => {
    const { page } = admin;
    const sent = await http(base, "POST", "/api/conversations/billing/messages", {
      key: adminKey,
      body: { external_user_id: "erin", text: "where is my invoice?" },
    });
    expect(sent.status).toBe(202);
    const failed = await pollUntil(
      "the failed record",
      () => http(base, "GET", "/api/conversations/messages/failed", { key: adminKey }),
      (r) => r.body?.data?.items?.some((i: { message_id: string }) => i.message_id === sent.body.data.message_id),
    );
    const record = failed.body.data.items.find((i: { message_id: string }) => i.message_id === sent.body.data.message_id);
    expect(typeof record.error).toBe("string");
    await page.goto(`${base}/console/#/conversations`);
    await page.getByRole("link", { name: "Failures" }).click();
    const item = await visible(page.locator(`li.failure[data-message-id="${sent.body.data.message_id}"]`));
    await visible(item.getByText(`Reason: ${record.error}`));
    await shot(page, "failures");
    await item.getByRole("link", { name: /Open thread/ }).click();
    await visible(page.locator(".transcript").getByText("where is my invoice?"));
    await visible(page.locator(".transcript .reason").filter({ hasText: record.error }));
  });

  it("hides every control a narrow key would be refused (403) and shows what it may read", async () => {
    const minted = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "viewer", scopes: ["conversations:read"] } });
    expect(minted.status).toBe(200);
    const narrow = minted.body.data.api_key as string;
    const threadId = "bridge:support:777";
    // What the console hides is refused by the API for this key.
    expect((await http(base, "PUT", "/api/conversations/support/thread/mode", { key: narrow, body: { thread_id: threadId, mode: "manual" } })).status).toBe(
      403,
    );
    expect((await http(base, "POST", "/api/conversations/support/thread/messages", { key: narrow, body: { thread_id: threadId, text: "x" } })).status).toBe(
      403,
    );
    expect((await http(base, "GET", "/api/conversations/messages/failed", { key: narrow })).status).toBe(403);
    const { page, context } = await newPage();
    await signIn(page, narrow, "viewer");
    await page.goto(`${base}/console/${threadHash("support", threadId)}`);
    await visible(page.locator(".transcript").getByText("hi from telegram"));
    await visible(page.getByText("Agent (the target answers)"));
    for (const name of ["Take over", "Hand back", "Send reply", "Forget thread"]) expect(await page.getByRole("button", { name }).count(), name).toBe(0);
    expect(await page.getByLabel("Message", { exact: true }).count()).toBe(0);
    expect(await page.getByRole("link", { name: "Failures" }).count()).toBe(0);
    // The listing is an admin door: the key is offered to open a thread by id instead.
    await page.goto(`${base}/console/#/conversations/support`);
    await visible(page.getByText("This key may not list threads"));
    await visible(page.getByLabel("Thread id", { exact: true }));
    await visible(page.getByText("● Live"));
    await context.close();
  });

  it("redeems a claim link from the address fragment, shows the new key once and signs it in", async () => {
    const link = await http(base, "POST", "/api/auth/claim-links", {
      key: adminKey,
      body: { user_id: "support-1", scopes: ["conversations:read"], ttl_seconds: 600 },
    });
    expect(link.status).toBe(200);
    const { page, context } = await newPage();
    await page.goto(`${base}/console/#claim=${link.body.data.token}`);
    const field = await visible(page.getByLabel("Claim token", { exact: true }));
    expect(await field.inputValue()).toBe(link.body.data.token);
    expect(page.url()).not.toContain("clm-");
    await page.getByRole("button", { name: "Redeem claim link" }).click();
    const shown = await visible(page.getByLabel("New api key", { exact: true }));
    const key = await shown.inputValue();
    expect(key).toMatch(/^sk-/);
    await page.getByRole("button", { name: "Continue as support-1" }).click();
    await visible(page.locator("#who").filter({ hasText: "Signed in as support-1" }));
    // The same token again is the API's uniform refusal, shown as it is.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Claim token", { exact: true }).fill(link.body.data.token);
    await page.getByRole("button", { name: "Redeem claim link" }).click();
    await visible(page.getByRole("alert").filter({ hasText: "claim token is invalid, expired or already used" }));
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await context.close();
  });

  it("forgets a thread and erases a person, each only after a confirmation", async () => {
    const { page } = admin;
    // Forget: a dismissed confirmation changes nothing; an accepted one forgets the thread.
    const dana = "bridge:web:root/dana";
    await page.goto(`${base}/console/${threadHash("web", dana)}`);
    await visible(page.locator(".transcript").getByText("hello from dana"));
    page.once("dialog", (d) => void d.dismiss());
    await page.getByRole("button", { name: "Forget thread" }).click();
    expect((await http(base, "GET", `/api/conversations/web/transcript?thread_id=${encodeURIComponent(dana)}`, { key: adminKey })).status).toBe(200);
    page.once("dialog", (d) => {
      expect(d.message()).toContain("cannot be undone");
      void d.accept();
    });
    await page.getByRole("button", { name: "Forget thread" }).click();
    await visible(page.getByText(/Thread forgotten \(\d+ records? removed\)/));
    await pollUntil(
      "the thread gone",
      () => http(base, "GET", `/api/conversations/web/transcript?thread_id=${encodeURIComponent(dana)}`, { key: adminKey }),
      (r) => r.status === 404 || r.body?.data?.items?.length === 0,
    );

    // A person across two routes (README, "Persons"): its addresses, its locale, then Erase person.
    expect((await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "agent-runner", scopes: ["agent:echo"] } })).status).toBe(200);
    for (const r of ["pweb", "papp"])
      expect(
        (
          await http(base, "POST", `/api/conversations/${r}`, {
            key: adminKey,
            body: { door: "api", target_kind: "agent", target_name: "echo", execution_key: "agent-runner" },
          })
        ).status,
      ).toBe(200);
    const config = await http(base, "PUT", "/api/conversation-configs/agent/echo", {
      key: adminKey,
      body: { target_kind: "agent", target_name: "echo", multichannel: true, greeting_template: "Send {pairing_code} on your other channel." },
    });
    expect(config.status).toBe(200);
    const say = (route: string, who: string, text: string) =>
      http(base, "POST", `/api/conversations/${route}/messages`, { key: adminKey, body: { external_user_id: who, text, wait_seconds: 10 } });
    const greeted = await say("pweb", "ann", "hello");
    const code = /LINK-[A-Z0-9]{8}/.exec(greeted.body.data.answer)?.[0];
    expect(code).toBeTruthy();
    await say("papp", "ann-phone", `my code is ${code}`);
    const linked = await say("papp", "ann-phone", "still me");
    const personThread: string = linked.body.data.thread_id;
    expect(personThread).toMatch(/^bridge:@person:/);
    const personId = personThread.slice("bridge:@person:".length);
    await page.goto(`${base}/console/${threadHash("pweb", personThread)}`);
    const person = await visible(page.locator("section.person"));
    await visible(person.getByRole("cell", { name: "root/ann", exact: true }));
    await visible(person.getByRole("cell", { name: "root/ann-phone", exact: true }));
    await visible(person.getByText("locale: not set"));
    await visible(page.locator(".transcript").getByText("still me"));
    // The reply box offers the person's addresses as recipients.
    expect(await page.getByLabel("Send to", { exact: true }).locator("option").allTextContents()).toContain("root/ann-phone (api)");
    await shot(page, "person");
    page.once("dialog", (d) => {
      expect(d.message()).toContain(`Erase person ${personId}`);
      void d.accept();
    });
    await person.getByRole("button", { name: "Erase person" }).click();
    await visible(page.getByText(`Person ${personId} erased.`));
    expect((await http(base, "GET", `/api/conversations/persons/${personId}`, { key: adminKey })).status).toBe(404);
  });

  it("shows runs with a trace's step timings, pending interactions and notifications", async () => {
    const { page } = admin;
    await pollUntil(
      "runs in the index",
      () => http(base, "GET", "/api/runs", { key: adminKey }),
      (r) => (r.body?.data?.total ?? 0) >= 2,
    );
    await page.goto(`${base}/console/#/operations`);
    const runs = await visible(page.locator("section").filter({ has: page.getByRole("heading", { name: "Runs" }) }));
    await visible(runs.locator("tbody tr"));
    await runs.locator("tbody a").first().click();
    await visible(page.getByRole("heading", { name: /^Trace / }));
    await visible(page.getByRole("table").filter({ hasText: "Share of the run" }));
    // The interactions panel answers: its list, or the API's own message.
    const pending = page.locator("section").filter({ has: page.getByRole("heading", { name: "Pending interactions" }) });
    await visible(pending.getByText("Nothing is waiting for an answer.").or(pending.locator("li.interaction")).or(pending.locator("p.error:not([hidden])")));
    await visible(page.getByRole("heading", { name: "Notifications" }));
    await shot(page, "operations");
  });

  it("reads at 360 px wide and in dark mode", async () => {
    const phone = await newPage({ viewport: { width: 360, height: 740 }, deviceScaleFactor: 1 });
    await signIn(phone.page, adminKey, "root");
    await phone.page.goto(`${base}/console/${threadHash("support", "bridge:support:777")}`);
    await visible(phone.page.locator(".transcript").getByText("An operator here"));
    // One pane at a time, nothing wider than the screen.
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    expect(await phone.page.locator(".pane.routes").isVisible()).toBe(false);
    await visible(phone.page.getByRole("link", { name: "← Threads" }));
    await shot(phone.page, "phone-thread");
    await phone.context.close();

    const dark = await newPage({ colorScheme: "dark" });
    await signIn(dark.page, adminKey, "root");
    await dark.page.goto(`${base}/console/${threadHash("support", "bridge:support:777")}`);
    await visible(dark.page.locator(".transcript").getByText("An operator here"));
    const bg = await dark.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).toBe("rgb(17, 20, 24)");
    await shot(dark.page, "dark-thread");
    await dark.context.close();
  });

  it("serves the interactive API reference from this origin under its own CSP", async () => {
    const { page, context } = await newPage();
    const origins = new Set<string>();
    page.on("request", (r) => origins.add(new URL(r.url()).origin));
    await page.goto(`${base}/docs`);
    expect(page.url()).toBe(`${base}/api/docs`);
    // Scalar fetched the live document and rendered it (slow on a busy machine: it parses the whole document).
    await visible(page.getByRole("heading", { name: "Conversation Bridge and Operator HTTP Service" }), 90_000);
    await visible(page.getByText("Mint the first admin key with the deployment's bootstrap token"), 60_000);
    await shot(page, "api-reference");
    expect([...origins].filter((o) => o !== base && !o.startsWith("data:") && o !== "null")).toEqual([]);
    await context.close();
  });

  it("reported no CSP violation and no page error on any screen", () => {
    expect(violations).toEqual([]);
  });
});
