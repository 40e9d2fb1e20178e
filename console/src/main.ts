/**
 * The operator console (docs/console.md). Hash routes, so the page is one static file
 * and a reload or a shared link lands on the same screen (the key is never part of it):
 *   #/inbox[/<route>/<thread id>]              every route's threads in the inbox's views, one thread
 *   #/conversations[/<route>[/<thread id>]]   routes, threads, one thread
 *   #/failures                                 failed deliveries
 *   #/operations[/runs/<trace id>]             runs and traces, pending interactions, notifications, team figures
 */
import { ApiError, call, messageOf } from "./api";
import { DOORS } from "./doors";
import { fill, focus, h } from "./dom";
import { type Me, can, currentMe, mayTry, restoreKey, setKey, setMe, signOut } from "./session";
import { announce } from "./ui";
import { stopAllLive } from "./live";
import { ConversationsView } from "./views/conversations";
import { InboxView } from "./views/inbox";
import { renderFailures } from "./views/failures";
import { renderOperations } from "./views/operations";
import { renderSignIn, takeClaimFromFragment } from "./views/signin";

const main = document.getElementById("main") as HTMLElement;
const nav = document.getElementById("nav") as HTMLElement;
const who = document.getElementById("who") as HTMLElement;
let conversations: ConversationsView | null = null;
let inbox: InboxView | null = null;

/** The first screen: the inbox when the key may read it, else the conversations. */
function home(): string {
  return can(DOORS.inbox) ? "inbox" : "conversations";
}

async function signIn(key: string): Promise<void> {
  if (!key) throw new Error("Paste an api key first.");
  setKey(key);
  try {
    setMe(await call<Me>("GET", DOORS.me[1]));
  } catch (err) {
    signOut();
    throw err;
  }
  announce(`Signed in as ${currentMe()?.user_id}.`);
  if (!location.hash || location.hash === "#" || location.hash === "#/" || location.hash.startsWith("#claim=")) location.hash = `#/${home()}`;
  render();
}

function leave(notice?: string): void {
  conversations?.dispose();
  conversations = null;
  inbox?.dispose();
  inbox = null;
  stopAllLive();
  signOut();
  renderChrome();
  renderSignIn(main, { signIn }, null, notice);
}

function renderChrome(): void {
  const me = currentMe();
  if (!me) {
    nav.hidden = true;
    fill(nav);
    fill(who);
    return;
  }
  const here = location.hash.split("/")[1] || home();
  const link = (href: string, label: string, section: string) => h("a", { href, "aria-current": here === section ? "page" : null }, label);
  const links = [
    can(DOORS.inbox) ? link("#/inbox", "Inbox", "inbox") : null,
    link("#/conversations", "Conversations", "conversations"),
    can(DOORS.failed) ? link("#/failures", "Failures", "failures") : null,
    can(DOORS.runs) || can(DOORS.notifications) || can(DOORS.metrics) || mayTry(DOORS.pending) ? link("#/operations", "Operations", "operations") : null,
    h("a", { href: "/api/docs" }, "API reference"),
  ];
  fill(
    nav,
    h(
      "ul",
      null,
      links.filter(Boolean).map((a) => h("li", null, a)),
    ),
  );
  nav.hidden = false;
  const out = h("button", { type: "button" }, "Sign out");
  out.addEventListener("click", () => leave("Signed out. The key was removed from this tab."));
  fill(
    who,
    h("span", null, "Signed in as ", h("strong", null, me.user_id), me.admin ? " (admin)" : me.owner_user_id ? ` (owned by ${me.owner_user_id})` : ""),
    " ",
    out,
  );
}

function render(): void {
  if (!currentMe()) return;
  renderChrome();
  const parts = location.hash
    .replace(/^#\/?/, "")
    .split("/")
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  const section = parts[0] || home();
  if (section !== "conversations") {
    conversations?.dispose();
    conversations = null;
  }
  if (section !== "inbox" || !can(DOORS.inbox)) {
    inbox?.dispose();
    inbox = null;
  }
  if (section === "inbox" && can(DOORS.inbox)) {
    if (!inbox) {
      inbox = new InboxView();
      main.replaceChildren(h("h1", { id: "view-title", class: "visually-hidden" }, "Inbox"), inbox.el);
    }
    const route = parts[1] || null;
    const thread = route && parts[2] ? parts.slice(2).join("/") : null;
    inbox.show(route, thread);
    if (!thread) focus(main.querySelector<HTMLElement>("#inbox-title") ?? main);
    return;
  }
  if (section === "failures" && can(DOORS.failed)) return renderFailures(main);
  if (section === "operations") return renderOperations(main, parts[1] === "runs" && parts[2] ? parts[2] : null);
  if (!conversations) {
    conversations = new ConversationsView();
    main.replaceChildren(h("h1", { id: "view-title", class: "visually-hidden" }, "Conversations"), conversations.el);
  }
  const route = parts[1] || null;
  const thread = route && parts[2] ? parts.slice(2).join("/") : null;
  conversations.show(route, thread);
  if (!thread) focus(main.querySelector<HTMLElement>(route ? "#threads-title" : "#routes-title") ?? main);
}

async function boot(): Promise<void> {
  const claim = takeClaimFromFragment();
  const key = restoreKey();
  if (!key || claim) {
    renderSignIn(main, { signIn }, claim);
    return;
  }
  fill(main, h("p", { class: "muted" }, "Signing in…"));
  try {
    setMe(await call<Me>("GET", DOORS.me[1]));
  } catch (err) {
    // A revoked or disabled key: back to sign-in, with the API's message.
    leave(err instanceof ApiError && err.status === 401 ? `The stored key was refused: ${messageOf(err)}` : messageOf(err));
    return;
  }
  render();
}

// The inbox's keys (its list of them is under "Keyboard shortcuts" on that screen).
document.addEventListener("keydown", (e) => {
  if (inbox?.onKey(e)) e.preventDefault();
});

let section = "";
window.addEventListener("hashchange", () => {
  // A message about what was done stays while the operator is in the same section.
  const now = location.hash.split("/")[1] ?? "";
  if (now !== section) announce("");
  section = now;
  render();
});
void boot();
