/**
 * Business hours in a real Chromium against the browser project's shared `wrangler dev`
 * (docs/channels.md "Business hours on the web chat", docs/inbox.md "Business hours"), told in
 * order:
 *
 *   a closed route's chat page says "We're away; back …" in the visitor's language (German here)
 *   with the next opening in their own time zone, and a message gets the agent's answer and, once, when a person is back →
 *   the widget on a page of another origin says the same when it opens → the console shows the
 *   route closed, and hours saved there (open all week, a reply time) turn the page's line into the
 *   expected reply time.
 *
 * No page may report a CSP violation or a page error.
 */
import { type Server, createServer } from "node:http";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../e2e/harness";
import { consoleSignIn, pageOpener, visible } from "./support/pages";
import { sharedChromium, sharedServer } from "./support/shared";
import { STRING_TABLES, fill } from "../../src/web-chat/strings/index";

let base: string;
let browser: Browser;
let adminKey: string;
let host: { server: Server; origin: string };
const violations: string[] = [];
/** A visitor in Tokyo whose browser speaks German: the chat speaks German, the next opening is written for them. */
const newPage = pageOpener(() => browser, violations, { viewport: { width: 1024, height: 768 }, locale: "de-DE", timezoneId: "Asia/Tokyo" });
const signIn = consoleSignIn(() => base);

/** The route is open only on the day after tomorrow (UTC), 09:00 to 10:00: closed now, whatever the time. */
const OPENING = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 2, 9));
const OPEN_DAY = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"][OPENING.getUTCDay()];
const AWAY = "Closed for now. A person is back {next_opening}.";
const DE = STRING_TABLES.de;

async function say(page: Page, text: string): Promise<void> {
  const input = page.getByLabel(DE.message, { exact: true });
  await input.fill(text);
  await input.press("Enter");
}

/** The next opening as the page's browser writes it (its locale and time zone). */
function inVisitorClock(page: Page): Promise<string> {
  return page.evaluate((iso) => new Date(iso).toLocaleString([], { weekday: "long", hour: "2-digit", minute: "2-digit" }), OPENING.toISOString());
}

/** A page of another origin (localhost rather than 127.0.0.1) with the widget of `hours-desk`. */
async function startHost(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Opening hours</title></head>
<body><h1>A shop that closes at night</h1>
<script src="${base}/api/channels/web/widget.js" data-identity="hours-desk" async></script></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return { server, origin: `http://localhost:${typeof a === "object" && a ? a.port : 0}` };
}

beforeAll(async () => {
  [browser, { baseUrl: base, adminKey }] = await Promise.all([sharedChromium(), sharedServer()]);
  const runner = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "hours-runner", scopes: ["tool:echo"] } });
  expect(runner.status, JSON.stringify(runner.body)).toBe(200);
  const route = await http(base, "POST", "/api/conversations/hours-desk", {
    key: adminKey,
    body: { door: "channel", channel: "web", our_identity: "hours-desk", target_kind: "tool", target_name: "echo", execution_key: "hours-runner" },
  });
  expect(route.status, JSON.stringify(route.body)).toBe(200);
  const hours = await http(base, "PUT", "/api/conversations/hours-desk/hours", {
    key: adminKey,
    body: { time_zone: "UTC", weekly: { [OPEN_DAY]: [["09:00", "10:00"]] }, away_message: AWAY, agent_out_of_hours: "handoff_note" },
  });
  expect(hours.status, JSON.stringify(hours.body)).toBe(200);
  expect(hours.body.data).toMatchObject({ open_now: false, next_opening: OPENING.toISOString() });
  host = await startHost();
  const site = await http(base, "PUT", "/api/channels/web/sites/hours-desk", { key: adminKey, body: { allowed_origins: [host.origin] } });
  expect(site.status, JSON.stringify(site.body)).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (host ? host.server.close(() => resolve()) : resolve()));
});

describe("business hours on the web chat", () => {
  it("a closed route's page says when people are back, in the visitor's clock; a message is answered and the customer told once", async () => {
    const { page, context } = await newPage();
    await page.goto(`${base}/api/channels/web/chat/hours-desk`);
    const when = await inVisitorClock(page);
    // German, and Tokyo's clock: 09:00 UTC is 18:00 there.
    expect(when).toMatch(/^(Montag|Dienstag|Mittwoch|Donnerstag|Freitag|Samstag|Sonntag)/);
    expect(when).toContain("18:00");
    await visible(page.locator(".tai-hours").filter({ hasText: fill(DE["hours.away"], { when }) }));

    await say(page, "anyone there?");
    await visible(page.locator(".tai-entry.tai-bot").filter({ hasText: "anyone there?" }));
    const note = page.locator(".tai-entry").filter({ hasText: "Closed for now. A person is back" });
    await visible(note);
    await say(page, "still there?");
    await visible(page.locator(".tai-entry.tai-bot").filter({ hasText: "still there?" }));
    expect(await note.count()).toBe(1);
    await context.close();
  });

  it("the widget on another origin shows the same line when it opens", async () => {
    const { page, context } = await newPage();
    await page.goto(host.origin);
    await (await visible(page.getByRole("button", { name: /chat/i }))).click();
    const when = await inVisitorClock(page);
    await visible(page.locator(".tai-hours").filter({ hasText: fill(DE["hours.away"], { when }) }));
    await context.close();
  });

  it("the console shows the route closed; hours saved there turn the page's line into the expected reply time", async () => {
    const { page, context } = await newPage({ locale: "en-US", timezoneId: "UTC" });
    await signIn(page, adminKey, "root");
    await page.goto(`${base}/console/#/conversations/hours-desk`);
    await (await visible(page.getByText("Business hours", { exact: true }))).click();
    await visible(page.getByText("Closed. Opens next"));
    expect(await page.getByLabel("Away message").inputValue()).toBe(AWAY);
    for (const day of ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]) {
      await page.getByLabel(day, { exact: true }).fill("00:00-24:00");
    }
    await page.getByLabel("Expected reply time").fill("a few minutes");
    await page.getByRole("button", { name: "Save hours" }).click();
    await visible(page.getByText("Open now."));
    await context.close();

    const visitor = await newPage();
    await visitor.page.goto(`${base}/api/channels/web/chat/hours-desk`);
    // The operator's own reply-time text, in the visitor's language's sentence.
    await visible(visitor.page.locator(".tai-hours").filter({ hasText: fill(DE["hours.reply"], { time: "a few minutes" }) }));
    await visitor.context.close();
  });

  it("saw no CSP violation and no page error", () => {
    expect(violations).toEqual([]);
  });
});
