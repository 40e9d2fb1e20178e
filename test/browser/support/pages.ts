/**
 * What the browser suites share: a fresh context and page that report every CSP refusal and page
 * error into the suite's list, a wait for the first visible match of a locator, and the console's
 * sign-in.
 */
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";

export type ContextOptions = Parameters<Browser["newContext"]>[0];

/** Opens pages in `browser()` with `defaults`; CSP refusals and page errors go to `violations`. */
export function pageOpener(browser: () => Browser, violations: string[], defaults: ContextOptions = {}) {
  return async (opts: ContextOptions = {}): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser().newContext({ ...defaults, ...opts });
    // A navigation waits for the page's load event; with servers, the workerd suite and the checks
    // on two cores it has taken over playwright's default 30 s. A page that never loads still fails.
    context.setDefaultNavigationTimeout(90_000);
    const page = await context.newPage();
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to (load|execute|apply|connect)/i.test(m.text())) violations.push(`${page.url()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => violations.push(`${page.url()}: page error: ${e.message}`));
    return { context, page };
  };
}

/** The first match of `l`, once it is visible. */
export async function visible(l: Locator, timeout = 15_000): Promise<Locator> {
  await l.first().waitFor({ state: "visible", timeout });
  return l.first();
}

/** Signs `page` in to the console of the server at `base()` with `key`, as the user `who`. */
export function consoleSignIn(base: () => string) {
  return async (page: Page, key: string, who: string): Promise<void> => {
    await page.goto(`${base()}/console/`);
    await page.getByLabel("API key", { exact: true }).fill(key);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await visible(page.locator("#who").filter({ hasText: `Signed in as ${who}` }));
  };
}
