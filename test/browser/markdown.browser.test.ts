/**
 * The markdown subset on the chat page (docs/web-channel-client.md "Formatting") in a real Chromium
 * against a real `wrangler dev`, the browser project's shared ones (test/browser/support/shared.ts): the hostile corpus (test/shared/markdown-corpus.ts) comes back as
 * an answer of the echo tool and as an operator's message, on the page as served, whose policy
 * requires Trusted Types. No script runs, the transcript holds only the chat's own elements and the
 * subset's, every link is https with noopener noreferrer, the visitor's own copy stays plain text,
 * and no CSP or Trusted Types violation is reported.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../e2e/harness";
import { HOSTILE } from "../shared/markdown-corpus";
import { pageOpener, visible } from "./support/pages";
import { sharedChromium, sharedServer } from "./support/shared";

let base: string;
let browser: Browser;
let adminKey: string;
const violations: string[] = [];
const newPage = pageOpener(() => browser, violations, { viewport: { width: 480, height: 900 } });

/**
 * The corpus as one message, a text that fits the page's 8000 characters; its lone surrogate as
 * U+FFFD, as the text box holds it (and as the operator door, which refuses lone surrogates, needs).
 */
const CORPUS = HOSTILE.join("\n\n").replace("\uD800", "\uFFFD");
const ROUTE = "md";

/** The chat's own elements around each entry, and the ones the subset renders. */
const ALLOWED = new Set(["LI", "SPAN", "DIV", "P", "TIME", "BR", "STRONG", "EM", "S", "CODE", "PRE", "UL", "OL", "BLOCKQUOTE", "A"]);

type Inspection = { tags: string[]; attributes: string[]; links: Array<{ href: string; rel: string; target: string }>; pwned: unknown; seen: string[] };

/** What the transcript holds: unexpected tags and attributes, every link, the script flag, the violations the page saw. */
function inspect(page: Page): Promise<Inspection> {
  return page.evaluate((allowed) => {
    const list = document.querySelector(".tai-list");
    const tags: string[] = [];
    const attributes: string[] = [];
    // The rating bar under each answer is the chat's own control, not message content.
    for (const el of list ? Array.from(list.querySelectorAll("*")).filter((e) => !e.closest(".tai-rate")) : []) {
      if (!allowed.includes(el.tagName)) tags.push(el.tagName);
      for (const a of Array.from(el.attributes))
        if (!["class", "href", "target", "rel", "start", "datetime", "data-seq"].includes(a.name)) attributes.push(`${el.tagName}[${a.name}]`);
    }
    const links = Array.from(list?.querySelectorAll("a") ?? []).map((a) => ({
      href: a.getAttribute("href") ?? "",
      rel: a.getAttribute("rel") ?? "",
      target: a.getAttribute("target") ?? "",
    }));
    const w = window as unknown as { __pwned?: unknown; __violations?: string[] };
    return { tags, attributes, links, pwned: w.__pwned, seen: w.__violations ?? [] };
  }, Array.from(ALLOWED));
}

beforeAll(async () => {
  [browser, { baseUrl: base, adminKey }] = await Promise.all([sharedChromium(), sharedServer()]);
  const runner = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "md-runner", scopes: ["tool:echo"] } });
  expect(runner.status).toBe(200);
  const route = await http(base, "POST", `/api/conversations/${ROUTE}`, {
    key: adminKey,
    body: { door: "channel", channel: "web", our_identity: ROUTE, target_kind: "tool", target_name: "echo", execution_key: "md-runner" },
  });
  expect(route.status, JSON.stringify(route.body)).toBe(200);
});

afterAll(async () => {
  await browser?.close();
});

describe("markdown on the chat page", () => {
  it("renders hostile answers and operator messages as inert text and https links, under Trusted Types", async () => {
    const { page, context } = await newPage();
    // The page's own policy requires Trusted Types (WEB_PAGE_CSP); every violation is kept.
    await page.addInitScript(() => {
      const w = window as unknown as { __violations: string[] };
      w.__violations = [];
      document.addEventListener("securitypolicyviolation", (e) => w.__violations.push(`${e.violatedDirective}: ${e.blockedURI}`));
    });
    await page.goto(`${base}/api/channels/web/chat/${ROUTE}`);
    const input = await visible(page.getByLabel("Message", { exact: true }));
    await input.fill(CORPUS);
    await input.press("Enter");
    const answer = await visible(page.locator(".tai-entry.tai-bot .tai-md").filter({ hasText: "tilde fence, never closed" }));

    // The answer: markup shown as text, the subset as elements.
    expect(await answer.textContent()).toContain("<script>window.__pwned = 1</script> after the script");
    expect(await answer.locator("strong").count()).toBeGreaterThan(0);
    expect(await answer.locator("pre > code").count()).toBeGreaterThan(0);
    expect(await answer.locator("ul > li > ul > li").count()).toBeGreaterThan(0);
    expect(await answer.locator("blockquote").count()).toBeGreaterThan(0);
    // The visitor's own copy is the text as typed, with no element inside.
    const mine = page.locator(".tai-entry.tai-visitor .tai-text");
    expect(await mine.evaluate((p) => p.children.length)).toBe(0);
    expect((await mine.textContent())?.trim()).toBe(CORPUS.trim());

    // The same corpus from an operator, after a takeover.
    const visitorId = (await context.cookies())[0].value.split(".")[0];
    const threadId = `bridge:${ROUTE}:${visitorId}`;
    expect((await http(base, "PUT", `/api/conversations/${ROUTE}/thread/mode`, { key: adminKey, body: { thread_id: threadId, mode: "manual" } })).status).toBe(
      200,
    );
    const sent = await http(base, "POST", `/api/conversations/${ROUTE}/thread/messages`, { key: adminKey, body: { thread_id: threadId, text: CORPUS } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await visible(page.locator(".tai-entry.tai-operator .tai-md").filter({ hasText: "tilde fence, never closed" }));

    const seen = await inspect(page);
    expect(seen.pwned).toBeUndefined();
    expect(seen.tags).toEqual([]);
    expect(seen.attributes).toEqual([]);
    expect(seen.links.length).toBeGreaterThan(4);
    for (const link of seen.links) {
      expect(new URL(link.href).protocol, link.href).toBe("https:");
      expect(link.rel).toBe("noopener noreferrer");
      expect(link.target).toBe("_blank");
    }
    expect(seen.seen).toEqual([]);
    expect(violations).toEqual([]);
    // Trusted Types were enforced all along: an HTML sink is refused.
    expect(
      await page.evaluate(() => {
        try {
          document.createElement("div").innerHTML = "<b>x</b>";
          return "assigned";
        } catch (e) {
          return e instanceof TypeError ? "refused" : String(e);
        }
      }),
    ).toBe("refused");
    await context.close();
  });
});
