/**
 * Answer feedback in a real Chromium against a real `wrangler dev` (docs/inbox.md "Answer
 * feedback"), told in order on the browser project's shared server: a visitor of the chat page presses 👎 under an answer,
 * and the page still shows it pressed after a reload → an operator finds the thread in the
 * console's "Rated down" view, and its transcript marks the answer. No page may report a CSP
 * violation or a page error.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../e2e/harness";
import { pollUntil } from "../e2e/support/poll";
import { pageOpener, visible } from "./support/pages";
import { sharedChromium, sharedServer } from "./support/shared";

let base: string;
let browser: Browser;
let operatorKey: string;
const violations: string[] = [];

const newPage = pageOpener(() => browser, violations, { viewport: { width: 1280, height: 860 } });

beforeAll(async () => {
  let adminKey: string;
  [browser, { baseUrl: base, adminKey }] = await Promise.all([sharedChromium(), sharedServer()]);
  const mint = async (user_id: string, scopes: string[]) => {
    const r = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id, scopes } });
    expect(r.status).toBe(200);
    return r.body.data.api_key as string;
  };
  await mint("help-runner", ["tool:echo"]);
  operatorKey = await mint("rita", ["conversations:read", "conversations:write"]);
  const route = await http(base, "POST", "/api/conversations/help", {
    key: adminKey,
    body: { door: "channel", channel: "web", our_identity: "help", target_kind: "tool", target_name: "echo", execution_key: "help-runner" },
  });
  expect(route.status, JSON.stringify(route.body)).toBe(200);
});

afterAll(async () => {
  await browser?.close();
});

describe("answer feedback in Chromium", () => {
  it("a visitor rates an answer down; the page keeps it; an operator finds it in Rated down and sees the mark", async () => {
    const visitor = await newPage();
    const page = visitor.page;
    await page.goto(`${base}/api/channels/web/chat/help`);
    const input = page.getByLabel("Message", { exact: true });
    await input.fill("Where is my order?");
    await input.press("Enter");
    const answer = await visible(page.locator(".tai-entry.tai-bot").filter({ hasText: "Where is my order?" }), 20_000);
    const down = answer.getByRole("button", { name: "Not helpful", exact: true });
    const up = answer.getByRole("button", { name: "Helpful", exact: true });
    expect(await down.getAttribute("aria-pressed")).toBe("false");
    // The visitor's own message has nothing to rate.
    expect(await page.locator(".tai-entry.tai-visitor .tai-rate").count()).toBe(0);
    await down.click();
    await visible(page.locator(".tai-status").filter({ hasText: "Thanks for your feedback." }));
    expect(await down.getAttribute("aria-pressed")).toBe("true");
    expect(await up.getAttribute("aria-pressed")).toBe("false");

    // A reload shows the rating the stream says.
    await page.reload();
    const again = await visible(page.locator(".tai-entry.tai-bot").filter({ hasText: "Where is my order?" }), 20_000);
    await pollUntil(
      "the reloaded page's rating",
      async () => again.getByRole("button", { name: "Not helpful", exact: true }).getAttribute("aria-pressed"),
      (v) => v === "true",
    );

    // The operator's console: the inbox's Rated down view lists the thread (the listing trails the
    // thread by about a second, and the view is read again on each press).
    const operator = await newPage();
    const desk = operator.page;
    await desk.goto(`${base}/console/`);
    await desk.getByLabel("API key", { exact: true }).fill(operatorKey);
    await desk.getByRole("button", { name: "Sign in", exact: true }).click();
    await visible(desk.locator("#who").filter({ hasText: "Signed in as rita" }));
    const rows = desk.locator('.inbox-rows li[data-route="help"]');
    await pollUntil(
      "the thread in the Rated down view",
      async () => {
        await desk.getByRole("button", { name: "Rated down", exact: true }).click();
        await visible(desk.locator(".inbox-list .count").filter({ hasText: /^Rated down: / }));
        return rows.count();
      },
      (n) => n === 1,
      { intervalMs: 1000 },
    );
    await visible(rows.locator(".chip").filter({ hasText: "👎 1 rated down" }));
    await rows.locator("a").first().click();
    const record = await visible(desk.locator("ol.transcript li.record").filter({ hasText: "Where is my order?" }), 20_000);
    await visible(record.locator(".chip.rating-down").filter({ hasText: "Rated not helpful" }));

    expect(violations).toEqual([]);
  });
});
