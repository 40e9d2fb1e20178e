/**
 * Entry of the chat page (public/web/chat.js, loaded by GET /api/channels/web/chat/{identity}).
 * The page door already set the session cookie and wrote the markup (src/channels/web/assets.ts);
 * this reads the identity from its meta and runs the chat on those elements.
 */
import { cookieTransport } from "./transport";
import { Chat, type ChatElements } from "./ui";

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

function main(): void {
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
  chat.focusInput();
}

main();
