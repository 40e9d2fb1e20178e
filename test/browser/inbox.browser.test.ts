/**
 * The console's inbox in a real Chromium against a real `wrangler dev` (docs/inbox.md "The
 * console's inbox"), with two operators, Ana and Sam, each with their own key in their own browser
 * context. One server for the whole story, told in order:
 *
 *   a customer waits → the thread appears live in Ana's Waiting view, with a clock that turns
 *   overdue past its alert time (CONVERSATIONS_INBOX_SLA_SECONDS is 5 here) → Ana opens it with `j`
 *   and claims it with `c`; Sam sees her viewing and she sees him typing → Sam's claim and his send
 *   are refused naming Ana, and "Send anyway" sends → Ana labels it, filters by the label, inserts
 *   a canned response with `/` and sends it → she resolves it with `e`, and the customer's next
 *   message reopens it → a snooze to a time five seconds ahead wakes by the thread's own alarm →
 *   Take over on an agent thread claims it → a new waiting thread raises a browser notification,
 *   asked for on a button press only → Ana's private note reaches Sam's open thread, which offers
 *   him no delete, and never the customer's transcript → the Operations screen shows the team's
 *   figures for what the story did.
 *
 * The snooze is not shortened by any test hook (the server has none): the snooze door takes any
 * future instant, and the console's "Snooze until" sends one five seconds ahead. No page may report
 * a CSP violation. `npm run screenshots` writes the inbox's screenshots to docs/console/.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, ROOT, freePort, http, startDev } from "../e2e/harness";
import { pollUntil } from "../e2e/support/poll";
import { consoleSignIn, pageOpener, visible } from "./support/pages";
import { sharedChromium } from "./support/shared";

const SHOTS = process.env.UPDATE_SCREENSHOTS === "1" ? join(ROOT, "docs", "console") : mkdtempSync(join(tmpdir(), "inbox-shots-"));
const DESKTOP = { width: 1280, height: 860 };
const CAROL = "bridge:desk:root/carol";

let dev: DevServer;
let base: string;
let browser: Browser;
let adminKey: string;
let ana: { context: BrowserContext; page: Page };
let sam: { context: BrowserContext; page: Page };
const keys: Record<string, string> = {};
const violations: string[] = [];

const newPage = pageOpener(() => browser, violations, { viewport: DESKTOP });

async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage, animations: "disabled" });
}

const signIn = consoleSignIn(() => base);

/** A customer writes on an api route (as the admin's caller, so threads are `bridge:{route}:root/{who}`). */
function customer(route: string, who: string, text: string, waitSeconds?: number) {
  return http(base, "POST", `/api/conversations/${route}/messages`, {
    key: adminKey,
    body: { external_user_id: who, text, ...(waitSeconds ? { wait_seconds: waitSeconds } : {}) },
  });
}

function inboxState(route: string, threadId: string) {
  return http(base, "GET", `/api/conversations/${route}/thread/inbox?thread_id=${encodeURIComponent(threadId)}`, { key: adminKey });
}

/** Switches the list to `view` and waits until the list shows it. */
async function showView(page: Page, view: string): Promise<void> {
  await page.getByRole("button", { name: view, exact: true }).click();
  await visible(page.locator(".inbox-list .count").filter({ hasText: new RegExp(`^${view}: `) }));
}

const row = (page: Page, threadId: string) => page.locator(`.inbox-rows li[data-thread="${threadId}"]`);
const panel = (page: Page) => page.locator("section.inbox-state");
const notes = (page: Page) => page.locator("section.notes");

/** A fake Notification that records what the page does with it (headless Chromium shows none). */
function fakeNotifications(): void {
  const w = window as unknown as { notes: Array<{ title: string; body?: string }>; asked: number; Notification: unknown };
  w.notes = [];
  w.asked = 0;
  class FakeNotification {
    static permission: NotificationPermission = "default";
    static async requestPermission(): Promise<NotificationPermission> {
      w.asked += 1;
      FakeNotification.permission = "granted";
      return "granted";
    }
    onclick: (() => void) | null = null;
    constructor(title: string, opts?: { body?: string }) {
      w.notes.push({ title, body: opts?.body });
    }
    close(): void {}
  }
  w.Notification = FakeNotification;
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  // The project's shared Chromium, but a server of its own: its operators see every route and every
  // waiting thread of the server (test/browser/support/shared.ts).
  browser = await sharedChromium();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // A waiting customer's alert is due after 5 s, so the clock turns overdue within the test.
  dev = await startDev({ port, vars: { CONVERSATIONS_INBOX_SLA_SECONDS: "5" } });
  const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", description: "inbox tests", bootstrap_token: BOOTSTRAP_TOKEN } });
  expect(boot.status).toBe(200);
  adminKey = boot.body.data.token;
  const mint = async (user_id: string, scopes: string[]) => {
    const r = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id, scopes } });
    expect(r.status).toBe(200);
    return r.body.data.api_key as string;
  };
  await mint("inbox-runner", ["tool:echo"]);
  keys.ana = await mint("ana", ["conversations:read", "conversations:write"]);
  keys.sam = await mint("sam", ["conversations:read", "conversations:write"]);
  const route = (name: string, initial_mode: "agent" | "manual") =>
    http(base, "POST", `/api/conversations/${name}`, {
      key: adminKey,
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "inbox-runner", initial_mode },
    });
  // Two routes where every customer goes straight to a person, and one the agent answers.
  for (const [name, mode] of [
    ["desk", "manual"],
    ["shop", "manual"],
    ["bot", "agent"],
  ] as const)
    expect((await route(name, mode)).status).toBe(200);
  const canned = (shortcode: string, title: string, template: string) =>
    http(base, "PUT", `/api/inbox/canned-responses/${shortcode}`, { key: adminKey, body: { title, template } });
  expect((await canned("refund", "Refund timing", "Hi {{customer.address}}, your refund reaches your account within 5 days.")).status).toBe(201);
  expect((await canned("refund-late", "Late refund", "Sorry for the wait, I am {{operator.user_id}}.")).status).toBe(201);
  expect((await canned("hello", "Greeting", "Hello!")).status).toBe(201);
  ana = await newPage();
  await ana.context.addInitScript(fakeNotifications);
  sam = await newPage();
});

afterAll(async () => {
  await browser?.close();
  await dev?.close();
  if (process.env.UPDATE_SCREENSHOTS !== "1") rmSync(SHOTS, { recursive: true, force: true });
});

describe("the console's inbox in Chromium, two operators", () => {
  it("opens on the inbox, where a waiting customer appears live in Waiting with a clock that turns overdue", async () => {
    const { page } = ana;
    await signIn(page, keys.ana, "ana");
    // The inbox is the first screen after sign-in, on its Waiting view, watching both routes live.
    expect(page.url()).toContain("#/inbox");
    await visible(page.getByRole("heading", { name: "Inbox", exact: true }));
    await visible(page.locator(".inbox-head .live-state").filter({ hasText: "● Live (3 routes)" }));
    expect(await page.getByRole("button", { name: "Waiting", exact: true }).getAttribute("aria-pressed")).toBe("true");
    await visible(page.getByText("Nobody is waiting."));
    // Nothing asked for notifications on load.
    expect(await page.evaluate(() => (window as unknown as { asked: number }).asked)).toBe(0);

    expect((await customer("desk", "carol", "My refund never came")).status).toBe(202);
    const carol = await visible(row(page, CAROL), 15_000);
    await visible(carol.getByText("desk"));
    await visible(carol.getByText("unassigned"));
    await visible(carol.locator(".chip").filter({ hasText: "open" }));
    await visible(carol.locator(".clock").filter({ hasText: /^waiting \d+ s/ }));
    // Past the alert time (5 s) the clock says so.
    await visible(carol.locator(".clock.overdue").filter({ hasText: /overdue$/ }), 20_000);

    // A second customer on the other route: the oldest wait stays first.
    expect((await customer("shop", "dave", "Is the shop open on Sunday?")).status).toBe(202);
    await visible(row(page, "bridge:shop:root/dave"), 15_000);
    expect(await page.locator(".inbox-rows li[data-thread]").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-thread")))).toEqual([
      CAROL,
      "bridge:shop:root/dave",
    ]);
    // Unassigned lists both; Mine lists nothing yet.
    await showView(page, "Mine");
    await visible(page.getByText("No thread here."));
    await showView(page, "Unassigned");
    await visible(row(page, "bridge:shop:root/dave"));
    await showView(page, "Waiting");
    await visible(row(page, CAROL));
  });

  it("Ana opens the oldest wait with j and claims it with c; each sees the other on the thread; Sam's claim and send name Ana, and Send anyway sends", async () => {
    const { page } = ana;
    await page.locator("#inbox-title").focus();
    await page.keyboard.press("j");
    await page.waitForURL(/#\/inbox\/desk\//, { waitUntil: "commit" });
    await visible(page.locator(".transcript").getByText("My refund never came"));
    await visible(panel(page).getByText("Unassigned"));
    await page.locator("#thread-title").focus();
    await page.keyboard.press("c");
    await visible(panel(page).getByText("ana (you)"));
    expect((await inboxState("desk", CAROL)).body.data.assignee).toBe("ana");

    const s = sam.page;
    await signIn(s, keys.sam, "sam");
    await s.goto(`${base}/console/#/inbox/desk/${encodeURIComponent(CAROL)}`);
    await visible(s.locator(".transcript").getByText("My refund never came"));
    await visible(panel(s).locator(".assignee").filter({ hasText: "ana" }));
    // Presence, both ways, through the route's hub.
    await visible(s.locator(".presence").filter({ hasText: "ana is viewing" }), 15_000);
    await visible(page.locator(".presence").filter({ hasText: "sam is viewing" }), 15_000);
    await s.getByLabel("Message", { exact: true }).pressSequentially("Sam here, let me check");
    await visible(page.locator(".presence").filter({ hasText: "sam is typing" }), 15_000);

    // Sam's claim: refused, naming Ana; the thread stays hers.
    await panel(s).getByRole("button", { name: "Claim", exact: true }).click();
    await visible(panel(s).locator(".claimed").filter({ hasText: "ana holds this thread." }));
    expect((await inboxState("desk", CAROL)).body.data.assignee).toBe("ana");
    // Sam's send: refused, nothing written, then sent anyway.
    const before = await http(base, "GET", `/api/conversations/desk/transcript?thread_id=${encodeURIComponent(CAROL)}`, { key: adminKey });
    await s.getByRole("button", { name: "Send reply" }).click();
    await visible(s.locator("form.reply .claimed").filter({ hasText: "ana holds this thread; your reply was not sent." }));
    const still = await http(base, "GET", `/api/conversations/desk/transcript?thread_id=${encodeURIComponent(CAROL)}`, { key: adminKey });
    expect(still.body.data.items.length).toBe(before.body.data.items.length);
    await s.getByRole("button", { name: "Send anyway" }).click();
    await visible(s.locator(".transcript li.operator").filter({ hasText: "Sam here, let me check" }));
    await visible(s.getByText("Reply sent (the thread is held by another operator)."));
    // Ana's transcript takes Sam's message live.
    await visible(page.locator(".transcript li.operator").filter({ hasText: "Sam here, let me check" }), 15_000);
    expect((await inboxState("desk", CAROL)).body.data.assignee).toBe("ana");
  });

  it("Ana labels the thread, filters by the label, and inserts a canned response with /", async () => {
    const { page } = ana;
    await panel(page).getByLabel("Add label", { exact: true }).fill("refund");
    await panel(page).getByRole("button", { name: "Add", exact: true }).click();
    await visible(panel(page).locator(".label-list").getByText("refund"));
    expect((await inboxState("desk", CAROL)).body.data.labels).toEqual(["refund"]);
    // The list filters by the label (the listing catches up within about a second).
    await showView(page, "All");
    await page.locator(".inbox-list form.filters").getByLabel("Label", { exact: true }).fill("refund");
    await pollUntil(
      "the label filter to list carol's thread alone",
      async () => {
        await page.locator(".inbox-list form.filters").getByRole("button", { name: "Filter" }).click();
        await page.waitForTimeout(300);
        return page.locator(".inbox-rows li[data-thread]").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-thread")));
      },
      (ids) => ids.length === 1 && ids[0] === CAROL,
      { timeoutMs: 20_000 },
    );
    await visible(row(page, CAROL).locator(".chip.label").filter({ hasText: "refund" }));

    // `/` from the transcript starts a canned response in the reply box.
    await page.locator("#thread-title").focus();
    await page.keyboard.press("/");
    const text = page.getByLabel("Message", { exact: true });
    expect(await text.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.type("ref");
    const picker = await visible(page.getByRole("listbox", { name: "Canned responses" }));
    await visible(picker.getByRole("option", { name: /\/refund-late/ }));
    // What "/" alone listed gives way to what "/ref" lists.
    await picker.getByRole("option", { name: /\/hello/ }).waitFor({ state: "detached" });
    expect(await picker.getByRole("option").allTextContents()).toEqual(["/refund Refund timing", "/refund-late Late refund"]);
    await shot(page, "inbox-thread", true);
    await page.keyboard.press("Enter");
    await pollUntil(
      "the rendered canned response in the reply box",
      () => text.inputValue(),
      (v) => v === "Hi carol, your refund reaches your account within 5 days.",
    );
    expect(await picker.isHidden()).toBe(true);
    await page.getByRole("button", { name: "Send reply" }).click();
    await visible(page.locator(".transcript li.operator").filter({ hasText: "your refund reaches your account" }));
    // The live notice can show the reply before the send is done; once done, the console puts the
    // focus back in the reply box, and a key pressed before then would be typed into it.
    await pollUntil(
      "the focus back in the reply box after the send",
      () => text.evaluate((el) => el === document.activeElement),
      (v) => v,
    );
  });

  it("Ana resolves with e, and the customer's next message reopens it into Waiting", async () => {
    const { page } = ana;
    await page.locator("#thread-title").focus();
    await page.keyboard.press("e");
    await visible(panel(page).locator(".chip").filter({ hasText: "resolved" }));
    expect((await inboxState("desk", CAROL)).body.data.status).toBe("resolved");
    await visible(panel(page).getByRole("button", { name: "Reopen" }));
    expect((await customer("desk", "carol", "It still has not arrived")).status).toBe(202);
    // The open thread reads itself again on the notice: open, waiting again.
    await visible(panel(page).locator(".chip").filter({ hasText: "open" }), 15_000);
    await visible(panel(page).locator(".clock"));
    const state = (await inboxState("desk", CAROL)).body.data;
    expect(state).toMatchObject({ status: "open", waiting_reason: "reopened", assignee: "ana" });
    await page.locator(".inbox-list form.filters").getByLabel("Label", { exact: true }).fill("");
    await page.locator(".inbox-list form.filters").getByRole("button", { name: "Filter" }).click();
    await showView(page, "Waiting");
    await visible(row(page, CAROL), 15_000);
  });

  it("a snooze to a time five seconds ahead wakes by the thread's alarm", async () => {
    const { page } = ana;
    await page.locator("#thread-title").focus();
    await page.keyboard.press("s");
    const hour = page.getByRole("button", { name: "1 hour" });
    expect(await hour.evaluate((el) => el === document.activeElement)).toBe(true);
    await visible(page.getByRole("button", { name: "Tomorrow 9:00" }));
    // A time five seconds ahead, in the browser's own time zone, as the picker would give it.
    await page.getByLabel("Snooze until", { exact: true }).evaluate((el) => {
      const d = new Date(Date.now() + 5000);
      const p = (n: number) => String(n).padStart(2, "0");
      (el as HTMLInputElement).value =
        `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    });
    await page.getByRole("button", { name: "Snooze until", exact: true }).click();
    await visible(panel(page).locator(".chip").filter({ hasText: "snoozed" }));
    expect((await inboxState("desk", CAROL)).body.data.status).toBe("snoozed");
    // The alarm opens it again, and the open pane hears it live.
    await visible(panel(page).locator(".chip").filter({ hasText: "open" }), 30_000);
    expect((await inboxState("desk", CAROL)).body.data).toMatchObject({ status: "open", waiting_reason: "snooze_ended" });
    await visible(row(page, CAROL), 15_000);
    // "1 hour" snoozes until then; Reopen brings it back at once.
    await page.keyboard.press("s");
    await page.getByRole("button", { name: "1 hour" }).click();
    await visible(panel(page).locator(".chip").filter({ hasText: "snoozed" }));
    const until = Date.parse((await inboxState("desk", CAROL)).body.data.snoozed_until);
    expect(Math.abs(until - (Date.now() + 3600_000))).toBeLessThan(60_000);
    await panel(page).getByRole("button", { name: "Reopen" }).click();
    await visible(panel(page).locator(".chip").filter({ hasText: "open" }));
  });

  it("Take over on an agent's thread claims it", async () => {
    const { page } = ana;
    const sent = await customer("bot", "erin", "hello bot", 10);
    expect(sent.body.data.status).toBe("answered");
    await page.goto(`${base}/console/#/inbox/bot/${encodeURIComponent("bridge:bot:root/erin")}`);
    await visible(page.getByText("Agent (the target answers)"));
    await page.getByRole("button", { name: "Take over" }).click();
    await visible(page.getByText("Manual (an operator answers)"));
    await visible(panel(page).getByText("ana (you)"));
    expect((await inboxState("bot", "bridge:bot:root/erin")).body.data).toMatchObject({ status: "open", assignee: "ana" });
    await page.goto(`${base}/console/#/inbox/desk/${encodeURIComponent(CAROL)}`);
    await visible(page.locator(".transcript").getByText("It still has not arrived"));
    await visible(row(page, "bridge:bot:root/erin"), 15_000);
    await visible(page.locator(".presence").filter({ hasText: "sam is viewing" }), 15_000);
    await shot(page, "inbox");
  });

  it("two operators reply to one unowned thread at once: the first reply claims it, the second is refused until forced", async () => {
    const dave = "bridge:shop:root/dave";
    expect((await customer("shop", "dave", "Is anyone there?")).status).toBe(202);
    const a = ana.page;
    const s = sam.page;
    for (const page of [a, s]) {
      await page.goto(`${base}/console/#/inbox/shop/${encodeURIComponent(dave)}`);
      await visible(page.locator(".transcript").getByText("Is anyone there?"), 15_000);
      await visible(panel(page).getByText("Unassigned"));
    }
    await a.getByLabel("Message", { exact: true }).fill("Ana here, one moment");
    await s.getByLabel("Message", { exact: true }).fill("Sam here, hello");
    await a.getByRole("button", { name: "Send reply" }).click();
    await visible(a.locator(".transcript li.operator").filter({ hasText: "Ana here, one moment" }));
    expect((await inboxState("shop", dave)).body.data.assignee).toBe("ana");
    // Sam's view still said "Unassigned": his claim before the reply is refused, and so is the reply.
    await s.getByRole("button", { name: "Send reply" }).click();
    await visible(s.locator("form.reply .claimed").filter({ hasText: "ana holds this thread; your reply was not sent." }));
    const t = await http(base, "GET", `/api/conversations/shop/transcript?thread_id=${encodeURIComponent(dave)}`, { key: adminKey });
    expect(t.body.data.items.filter((i: { answer: string | null }) => i.answer === "Sam here, hello")).toHaveLength(0);
    expect((await inboxState("shop", dave)).body.data.assignee).toBe("ana");
  });

  it("notifies of a new waiting thread once the operator turned notifications on", async () => {
    const { page } = ana;
    await page.getByRole("button", { name: "Notify me of new waiting threads" }).click();
    await visible(page.getByText("Notifications on."));
    expect(await page.evaluate(() => (window as unknown as { asked: number }).asked)).toBe(1);
    expect((await customer("shop", "fay", "Do you ship abroad?")).status).toBe(202);
    const notes = await pollUntil(
      "a notification for fay",
      () => page.evaluate(() => (window as unknown as { notes: Array<{ title: string; body?: string }> }).notes),
      (n) => n.some((x) => x.body === "fay"),
      { timeoutMs: 20_000 },
    );
    // One for the new thread only, not for the ones already waiting.
    expect(notes).toEqual([{ title: "Waiting on shop", body: "fay" }]);
  });

  it("Ana writes a private note that Sam sees but may not delete; it never joins the customer's transcript; Ana deletes it", async () => {
    const a = ana.page;
    const s = sam.page;
    const thread = encodeURIComponent(CAROL);
    for (const page of [a, s]) {
      await page.goto(`${base}/console/#/inbox/desk/${thread}`);
      await visible(page.locator(".transcript").getByText("My refund never came"));
      await visible(notes(page).getByText("private: never sent to the customer"));
    }
    const text = "Finance approved the refund; do not promise a date.";
    await notes(a).getByLabel("Private note", { exact: true }).fill(text);
    await notes(a).getByRole("button", { name: "Add note" }).click();
    const mine = await visible(notes(a).locator("li.note").filter({ hasText: text }));
    await visible(mine.locator(".note-meta strong").filter({ hasText: "ana" }));
    await visible(mine.getByRole("button", { name: "Delete note" }));
    // Sam's open thread reads itself again on the write's live notice.
    const his = await visible(notes(s).locator("li.note").filter({ hasText: text }), 15_000);
    await visible(his.locator(".note-meta strong").filter({ hasText: "ana" }));
    expect(await his.getByRole("button", { name: "Delete note" }).count()).toBe(0);
    // Nor would the door let him.
    const listed = await http(base, "GET", `/api/conversations/desk/thread/notes?thread_id=${thread}`, { key: keys.sam });
    const noteId = listed.body.data.notes.find((n: { text: string }) => n.text === text).note_id as string;
    const refused = await http(base, "DELETE", `/api/conversations/desk/thread/notes/${noteId}?thread_id=${thread}`, { key: keys.sam });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("not_note_author");
    // The records the customer's side is built from never hold it, nor does either console's transcript.
    const records = await http(base, "GET", `/api/conversations/desk/transcript?thread_id=${thread}&pageSize=100`, { key: adminKey });
    expect(records.status).toBe(200);
    expect(records.body.data.items.length).toBeGreaterThan(0);
    expect(JSON.stringify(records.body.data)).not.toContain(text);
    for (const page of [a, s]) expect(await page.locator(".transcript").getByText(text).count()).toBe(0);

    await mine.getByRole("button", { name: "Delete note" }).click();
    await visible(notes(a).getByText("No notes."));
    expect((await http(base, "GET", `/api/conversations/desk/thread/notes?thread_id=${thread}`, { key: keys.ana })).body.data.notes).toEqual([]);
  });

  it("shows the team's figures on the Operations screen to a key that may read the metrics, and to no other", async () => {
    // Ana's key may not read the metrics door: no Team panel.
    await ana.page.goto(`${base}/console/#/operations`);
    await visible(ana.page.getByRole("heading", { name: "Operations", exact: true }));
    expect(await ana.page.locator("#team-title").count()).toBe(0);

    const lead = await newPage();
    const { page } = lead;
    await signIn(page, adminKey, "root");
    await page.goto(`${base}/console/#/operations`);
    const team = await visible(page.locator("section").filter({ has: page.getByRole("heading", { name: "Team", exact: true }) }));
    const desk = team.locator('tr[data-route="desk"]');
    // The counters ride the listing, which trails the threads by about a second: read until they are in.
    const figures = await pollUntil(
      "desk's row in the team figures, with a resolved thread or a first response",
      async () => {
        await team.getByRole("button", { name: "Show", exact: true }).click();
        await page.waitForTimeout(300);
        if (!(await desk.count())) return null;
        const cells = await desk.locator("td").allTextContents();
        return { firstResponse: cells[2] ?? "", resolved: cells[5] ?? "" };
      },
      (f) => f !== null && (/^[1-9]\d* \//.test(f.resolved) || f.firstResponse !== "—"),
      { timeoutMs: 20_000 },
    );
    expect(figures?.firstResponse).toMatch(/^(—|\d+ (s|min|h|d)\b)/);
    await visible(team.locator('tr[data-operator="ana"]'));
    await visible(team.locator(".top-labels").getByText("refund"));
    await lead.context.close();
  });

  it("reported no CSP violation and no page error", async () => {
    await sam.context.close();
    await ana.context.close();
    expect(violations).toEqual([]);
  });
});
