/**
 * The widget's and the page's language and look (docs/channels.md "Languages" and "The site's
 * look") in a real Chromium against the browser project's shared `wrangler dev`, on a host page of
 * another origin under a strict CSP (no style-src at all, Trusted Types required):
 *
 *   data-locale="ar" lays the widget out right to left in Arabic → data-locale="de" speaks German,
 *   and a site's data-strings override wins → without data-locale the browser's language is
 *   spoken, and once the visitor's person has a locale, that one → a site's colour, font, radius,
 *   position and icon apply → a colour pair failing WCAG AA is refused with a warning naming it →
 *   the chat page takes its language and colours from its link.
 *
 * No page may report a CSP violation or a page error.
 */
import { type Server, createServer } from "node:http";
import type { Browser, ConsoleMessage, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../e2e/harness";
import { type ToolServer, startToolServer } from "../e2e/support/tool-server";
import { type ContextOptions, pageOpener, visible } from "./support/pages";
import { sharedChromium, sharedServer } from "./support/shared";
import { must } from "../../src/platform/must";

let base: string;
let adminKey: string;
let browser: Browser;
let host: { server: Server; origin: string };
let teller: ToolServer;
const violations: string[] = [];
const newPage = pageOpener(() => browser, violations, { viewport: { width: 1024, height: 768 } });

/** The host pages: each embeds the widget with these attributes (beside its `src`). */
const PAGES: Record<string, string> = {
  "/ar": 'data-identity="look" data-locale="ar"',
  "/de": `data-identity="look" data-locale="de" data-strings='{"new":"Nochmal von vorn","de":{"send":"Los"},"no.such":"x"}'`,
  "/auto": 'data-identity="look"',
  "/person": 'data-identity="look-person"',
  "/brand":
    'data-identity="look" data-locale="en" data-accent="#7a1fa2" data-accent-text="#ffffff" data-background="#fdf8ff" data-text="#201a23" data-font="Georgia, serif" data-radius="4" data-position="bottom-left" data-icon="help"',
  "/glare": 'data-identity="look" data-locale="en" data-accent="#ffeb3b" data-accent-text="#ffffff" data-radius="99" data-icon="rocket"',
};

async function startHost(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const attrs = PAGES[req.url ?? ""];
    if (!attrs) return res.writeHead(404).end();
    const service = new URL(base);
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      // The strictest policy a site can keep with the widget: its script and its requests only.
      "content-security-policy": `default-src 'none'; script-src ${base}; connect-src ${base} ws://${service.host}; require-trusted-types-for 'script'`,
    });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body><h1>A shop</h1><script src="${base}/api/channels/web/widget.js" ${attrs} async></script></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return { server, origin: `http://localhost:${typeof a === "object" && a ? a.port : 0}` };
}

/** Opens a host page in a fresh context, collecting the widget's console warnings. */
async function hostPage(path: string, opts: ContextOptions = {}): Promise<{ page: Page; warnings: string[]; close: () => Promise<void> }> {
  const { page, context } = await newPage(opts);
  const warnings: string[] = [];
  page.on("console", (m: ConsoleMessage) => {
    if (m.type() === "warning" && m.text().startsWith("tai web")) warnings.push(m.text());
  });
  await page.goto(`${host.origin}${path}`);
  return { page, warnings, close: () => context.close() };
}

/** Clicks the launcher and waits for the panel's text box. */
async function openWidget(page: Page): Promise<void> {
  await (await visible(page.locator(".tai-launcher"))).click();
  await visible(page.locator(".tai-panel textarea"));
}

async function say(page: Page, text: string): Promise<void> {
  const input = page.locator(".tai-panel textarea");
  await input.fill(text);
  await input.press("Enter");
}

const css = (page: Page, selector: string, prop: string) =>
  page
    .locator(selector)
    .first()
    .evaluate((e, p) => getComputedStyle(e).getPropertyValue(p), prop);

beforeAll(async () => {
  [browser, { baseUrl: base, adminKey }] = await Promise.all([sharedChromium(), sharedServer()]);
  teller = await startToolServer((kwargs) => `person=${kwargs.person_id ?? "none"}`);
  const ok = (r: { status: number; body: unknown }) => expect(r.status, JSON.stringify(r.body)).toBe(200);
  ok(await http(base, "POST", "/api/tools-config/entries", { key: adminKey, body: { title: "look-teller", kind: "http", url: teller.url } }));
  ok(await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "look-runner", scopes: ["tool:echo", "tool:look-teller"] } }));
  ok(
    await http(base, "POST", "/api/conversations/look", {
      key: adminKey,
      body: { door: "channel", channel: "web", our_identity: "look", target_kind: "tool", target_name: "echo", execution_key: "look-runner" },
    }),
  );
  ok(
    await http(base, "POST", "/api/conversations/look-person", {
      key: adminKey,
      body: {
        door: "channel",
        channel: "web",
        our_identity: "look-person",
        target_kind: "tool",
        target_name: "look-teller",
        execution_key: "look-runner",
        payload_expr: "{message: .message, person_id: (.person_id // null)}",
      },
    }),
  );
  ok(
    await http(base, "PUT", "/api/conversation-configs/tool/look-teller", {
      key: adminKey,
      body: { target_kind: "tool", target_name: "look-teller", multichannel: true },
    }),
  );
  host = await startHost();
  for (const identity of ["look", "look-person"])
    ok(await http(base, "PUT", `/api/channels/web/sites/${identity}`, { key: adminKey, body: { allowed_origins: [host.origin] } }));
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (host ? host.server.close(() => resolve()) : resolve()));
  await teller?.stop();
  expect(violations).toEqual([]);
});

describe("the widget's language", () => {
  it('data-locale="ar": Arabic strings, laid out right to left, the launcher on the left', async () => {
    const { page, close } = await hostPage("/ar");
    const root = page.locator(".tai-widget");
    await expect.poll(() => root.getAttribute("dir")).toBe("rtl");
    expect(await root.getAttribute("lang")).toBe("ar");
    await visible(page.getByRole("button", { name: "فتح الدردشة: الدردشة" }));
    const launcher = must(await page.locator(".tai-launcher").boundingBox(), "the launcher's box");
    expect(launcher.x).toBeLessThan(100);
    await openWidget(page);
    await visible(page.getByRole("button", { name: "إرسال", exact: true }));
    await visible(page.getByRole("heading", { name: "الدردشة" }));
    expect(await css(page, ".tai-form", "direction")).toBe("rtl");
    await say(page, "مرحبا");
    const mine = page.locator(".tai-entry.tai-visitor:not(.tai-pending) .tai-bubble");
    await visible(mine);
    await visible(page.locator(".tai-entry.tai-bot .tai-bubble"));
    // Mirrored: the visitor's own words sit at the inline end, which is the left in Arabic.
    const list = must(await page.locator(".tai-list").boundingBox(), "the list's box");
    const bubble = must(await mine.first().boundingBox(), "the bubble's box");
    expect(bubble.x - list.x).toBeLessThan(list.x + list.width - (bubble.x + bubble.width));
    await close();
  });

  it('data-locale="de": German strings, with the site\'s overrides on top and an unknown key named in a warning', async () => {
    const { page, warnings, close } = await hostPage("/de", { locale: "fr-FR" });
    await openWidget(page);
    expect(await page.locator(".tai-widget").getAttribute("lang")).toBe("de");
    await visible(page.getByRole("button", { name: "Los", exact: true }));
    await visible(page.getByRole("button", { name: "Nochmal von vorn", exact: true }));
    await visible(page.getByLabel("Nachricht", { exact: true }));
    await visible(page.getByRole("button", { name: "Chat schließen", exact: true }));
    expect(warnings).toContain("tai web widget: data-strings no.such ignored");
    await close();
  });

  it("without data-locale speaks the browser's language, and then the visitor's person's locale", async () => {
    const fr = await hostPage("/auto", { locale: "fr-FR" });
    await openWidget(fr.page);
    await visible(fr.page.getByRole("button", { name: "Envoyer", exact: true }));
    await fr.close();

    const { page, close } = await hostPage("/person", { locale: "pt-BR" });
    await openWidget(page);
    await visible(page.getByRole("button", { name: "Enviar", exact: true }));
    await say(page, "hello");
    const answer = await visible(page.locator(".tai-entry.tai-bot .tai-text").filter({ hasText: "person=" }));
    const personId = must((await answer.textContent())?.trim().match(/^person=(\S+)$/), "the person id")[1];
    expect(personId).not.toBe("none");
    const set = await http(base, "PUT", `/api/conversations/persons/${encodeURIComponent(personId)}/locale`, { key: adminKey, body: { locale: "ja-JP" } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    // The same visitor on the next page view: the person's Japanese wins over the browser's Portuguese.
    await page.reload();
    await openWidget(page);
    await visible(page.getByRole("button", { name: "送信", exact: true }));
    expect(await page.locator(".tai-widget").getAttribute("lang")).toBe("ja");
    await close();
  });
});

describe("the widget's look", () => {
  it("carries its stylesheet and fetches its strings from the service, cacheable for good by their version", async () => {
    const { page, context } = await newPage();
    const got: Record<string, Record<string, string>> = {};
    page.on("response", (r) => {
      const path = new URL(r.url()).pathname;
      if (path.endsWith("/assets/chat.css") || path.includes("/strings/")) got[path] = r.headers();
    });
    await page.goto(`${host.origin}/de`);
    await visible(page.locator(".tai-launcher"));
    await expect.poll(() => Object.keys(got).sort()).toEqual(["/api/channels/web/strings/de"]);
    for (const headers of Object.values(got)) {
      expect(headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(headers["access-control-allow-origin"]).toBe("*");
    }
    await context.close();
  });

  it("applies a site's colours, font, radius, position and icon", async () => {
    const { page, warnings, close } = await hostPage("/brand");
    const launcher = await visible(page.locator(".tai-launcher"));
    await expect.poll(() => css(page, ".tai-launcher", "background-color")).toBe("rgb(122, 31, 162)");
    expect(await css(page, ".tai-launcher", "color")).toBe("rgb(255, 255, 255)");
    expect(await css(page, ".tai-launcher", "border-radius")).toBe("9.36px");
    expect(must(await launcher.boundingBox(), "the launcher's box").x).toBeLessThan(100);
    expect(await page.locator(".tai-launcher svg").getAttribute("class")).toBe("tai-stroke");
    await openWidget(page);
    expect(await css(page, ".tai-chat", "background-color")).toBe("rgb(253, 248, 255)");
    expect(await css(page, ".tai-chat", "color")).toBe("rgb(32, 26, 35)");
    expect(await css(page, ".tai-send", "background-color")).toBe("rgb(122, 31, 162)");
    expect(await css(page, ".tai-input", "font-family")).toBe("Georgia, serif");
    expect(await css(page, ".tai-panel", "border-radius")).toBe("4px");
    expect(warnings).toEqual([]);
    await close();
  });

  it("refuses a colour pair under WCAG AA, keeping the defaults, and names the attributes in warnings", async () => {
    const { page, warnings, close } = await hostPage("/glare", { colorScheme: "light" });
    await visible(page.locator(".tai-launcher"));
    await expect.poll(() => warnings.length).toBeGreaterThanOrEqual(3);
    expect(warnings).toEqual(
      expect.arrayContaining([
        "tai web widget: data-accent refused: contrast under 4.5:1",
        "tai web widget: data-accent-text refused: contrast under 4.5:1",
        "tai web widget: data-radius ignored: not 0 to 24",
        "tai web widget: data-icon ignored",
      ]),
    );
    // No warning echoes a value.
    expect(warnings.join(" ")).not.toContain("#ffeb3b");
    expect(await css(page, ".tai-launcher", "background-color")).toBe("rgb(11, 92, 173)");
    expect(await css(page, ".tai-launcher", "color")).toBe("rgb(255, 255, 255)");
    await close();
  });
});

describe("the chat page's language and look", () => {
  it("takes ?tai_locale= and the tai_ colours from its link", async () => {
    const { page, context } = await newPage();
    await page.goto(`${base}/api/channels/web/chat/look?tai_locale=ar&tai_accent=%237a1fa2&tai_accent_text=%23ffffff`);
    expect(await page.locator("html").getAttribute("dir")).toBe("rtl");
    const send = await visible(page.getByRole("button", { name: "إرسال", exact: true }));
    expect(await send.evaluate((e) => getComputedStyle(e).backgroundColor)).toBe("rgb(122, 31, 162)");
    await page.getByLabel("الرسالة", { exact: true }).fill("سلام");
    await page.getByLabel("الرسالة", { exact: true }).press("Enter");
    await visible(page.locator(".tai-entry.tai-bot").filter({ hasText: "سلام" }));
    await context.close();
  });
});
