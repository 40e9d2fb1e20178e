/**
 * Entry of the chat page (public/web/chat.js, loaded by GET /api/channels/web/chat/{identity}).
 * The page door already set the session cookie and wrote the markup (src/web-chat/assets.ts);
 * this reads the identity from its meta and runs the chat on those elements, offering a pairing
 * link's code to the visitor to send.
 */
import { el } from "./dom";
import { setStrings, t } from "./strings";
import { applyTheme } from "./theme";
import { cookieTransport } from "./transport";
import { Chat, type ChatElements } from "./ui";

const PAIRING_CODE = /^LINK-[A-Z0-9]{8}$/;

/**
 * A pairing link (`?tai_pair=LINK-…`). The page door never redeems it: a GET is what any other
 * site can make a browser send. The code leaves the address bar at once (a reload or a shared URL
 * does not offer it again) and is offered to the visitor, saying what it does; only their "Link"
 * sends it, as their own message (a same-origin POST), for the conversation's pairing turn.
 */
function offerPairing(chat: Chat, e: ChatElements): void {
  const url = new URL(location.href);
  const code = url.searchParams.get("tai_pair")?.trim() ?? null;
  if (code === null) return;
  url.searchParams.delete("tai_pair");
  history.replaceState(history.state, "", url.pathname + url.search + url.hash);
  if (!PAIRING_CODE.test(code)) return;
  const doc = e.form.ownerDocument;
  const link = el(doc, "button", { type: "button", class: "tai-chip", id: "tai-pair-link" }, t("pair.link"));
  const skip = el(doc, "button", { type: "button", class: "tai-chip", id: "tai-pair-skip" }, t("pair.skip"));
  const box = el(
    doc,
    "div",
    { class: "tai-card tai-pair-offer", id: "tai-pair-offer", role: "group", "aria-label": t("pair.label") },
    el(doc, "p", { class: "tai-text" }, t("pair.offer", { code })),
    el(doc, "div", { class: "tai-chips" }, link, skip),
  );
  link.addEventListener("click", () => {
    box.remove();
    chat.sendText(code);
  });
  skip.addEventListener("click", () => box.remove());
  e.form.before(box);
}

function byId<T extends HTMLElement>(id: string, type: { new (): T }): T {
  const found = document.getElementById(id);
  if (!(found instanceof type)) throw new Error(`the chat page has no #${id}`);
  return found;
}

/**
 * A lost cookie session is renewed by the page door itself: loading the page again mints one. At
 * most once a minute, so a cookie the browser keeps refusing (a Secure cookie over http) cannot
 * loop; then the chat says the session ended.
 */
function reloadOnce(identity: string): boolean {
  const key = `tai-web-reload:${identity}`;
  try {
    if (Date.now() - Number(sessionStorage.getItem(key) ?? 0) < 60_000) return false;
    sessionStorage.setItem(key, String(Date.now()));
  } catch {
    return false;
  }
  location.reload();
  return true;
}

/**
 * The page's language and look. The page door wrote the table of the page's language into the
 * page (`#tai-strings`, a JSON data block, which no CSP treats as a script) and set `<html lang
 * dir>`; the look comes from the link's `tai_*` parameters, as the widget's from its attributes.
 */
function dress(): void {
  let table: Record<string, string> = {};
  try {
    table = JSON.parse(document.getElementById("tai-strings")?.textContent ?? "{}");
  } catch {
    // A page without its table shows the keys: visible, never silent.
  }
  setStrings(table, document.documentElement.lang || "en");
  const params = new URL(location.href).searchParams;
  const param = (name: string) => `tai_${name.replace("-", "_")}`;
  applyTheme(
    document.documentElement,
    (name) => params.get(param(name)),
    (name, why) => console.warn(`tai web chat: ${param(name)} ${why}`),
  );
}

function main(): void {
  dress();
  const identity = document.querySelector<HTMLMetaElement>('meta[name="tai-identity"]')?.content ?? "";
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(identity)) throw new Error("the chat page names no web identity");
  const elements: ChatElements = {
    list: byId("tai-transcript", HTMLOListElement),
    status: byId("tai-status", HTMLElement),
    form: byId("tai-form", HTMLFormElement),
    input: byId("tai-input", HTMLTextAreaElement),
    send: byId("tai-send", HTMLButtonElement),
    renew: byId("tai-new", HTMLButtonElement),
  };
  const chat = new Chat(cookieTransport(identity), elements, { onSessionLost: () => reloadOnce(identity) });
  chat.start();
  offerPairing(chat, elements);
  chat.focusInput();
}

main();
