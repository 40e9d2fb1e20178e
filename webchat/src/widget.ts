/**
 * Entry of the embeddable widget (public/web/widget.js, docs/web-channel-client.md). A host page
 * adds it with
 *   <script src="https://<service>/api/channels/web/widget.js" data-identity="desk" async></script>
 * and gets a launcher button and a chat panel. Built as a classic script (not a module) so that
 * `document.currentScript` names the tag: its `data-identity` picks the web route and its `src`
 * gives the service's origin, which every request goes to.
 *
 * Everything lives in a shadow root, so the host page's styles and the widget's do not leak into
 * each other. The stylesheet is webchat/chat.css, inlined at build time (__TAI_WEB_CSS__) and
 * adopted as a constructed stylesheet: that needs no `style-src` on the host page's CSP, and no
 * extra request. A browser without constructed stylesheets gets a <link> to the service's copy.
 *
 * A page behind the site's login signs its user in (docs/web-channel-client.md, "Signed-in
 * users"): `data-user-token` on the tag, and later `TaiWeb.identify(token)` or the
 * `tai-web-identify` event (null signs out). When the service refuses a token or wants one, the
 * widget says so and fires `tai-web-token-needed` on window, so the page can hand it a fresh one.
 */
import { bearerTransport, DOOR_BASE, WebError } from "./transport";
import { el } from "./dom";
import { t } from "./strings";
import { EN, type StringKey } from "../../src/web-chat/strings/en";
import { buildChat, Chat } from "./ui";

declare const __TAI_WEB_CSS__: string;

const SVG = "http://www.w3.org/2000/svg";

/** A speech-bubble icon, drawn with DOM calls (no markup parsing on the host page). */
function icon(): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z");
  svg.append(path);
  return svg;
}

function styles(shadow: ShadowRoot, origin: string): void {
  if ("adoptedStyleSheets" in shadow && typeof CSSStyleSheet === "function" && "replaceSync" in CSSStyleSheet.prototype) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(__TAI_WEB_CSS__);
    shadow.adoptedStyleSheets = [sheet];
    return;
  }
  shadow.append(el(document, "link", { rel: "stylesheet", href: new URL(`${DOOR_BASE}assets/chat.css`, origin).href }));
}

function mount(identity: string, origin: string, title: string, token: string | undefined): void {
  // One widget per service and identity, even if the snippet is pasted twice; two services may
  // both have a `desk`, and each keeps its own session (token-key.ts).
  for (const existing of document.querySelectorAll("[data-tai-web]")) {
    if (existing.getAttribute("data-tai-web") === identity && existing.getAttribute("data-tai-web-service") === origin) return;
  }
  const host = el(document, "div", { "data-tai-web": identity, "data-tai-web-service": origin });
  const shadow = host.attachShadow({ mode: "open" });
  styles(shadow, origin);

  const { root, head, elements } = buildChat(document, title, "tai-w");
  const close = el(document, "button", { type: "button", class: "tai-close", "aria-label": "Close chat" }, "×");
  head.append(close);
  const panel = el(document, "div", { id: "tai-w-panel", class: "tai-panel", role: "dialog", "aria-labelledby": "tai-w-title", hidden: true }, root);
  const label = el(document, "span", { class: "tai-sr" }, `Open chat: ${title}`);
  const badge = el(document, "span", { class: "tai-badge", hidden: true }, el(document, "span", { class: "tai-sr" }, " (new message)"));
  const launcher = el(
    document,
    "button",
    { type: "button", class: "tai-launcher", "aria-expanded": "false", "aria-controls": "tai-w-panel" },
    icon(),
    label,
    badge,
  );
  shadow.append(el(document, "div", { class: "tai-widget" }, panel, launcher));

  const renew = elements.renew;
  const transport = bearerTransport(origin, identity, (offer) => {
    // A signed-in user's conversation is the same on every device: no "New conversation" while it lives.
    renew.hidden = Boolean(transport.user());
    if (offer) offerKeep();
  });
  const chat = new Chat(transport, elements, {
    onEntry: (entry, live) => {
      if (live && entry.role !== "visitor" && panel.hidden) badge.hidden = false;
    },
    onSessionLost: (err) => {
      // A proof refused, expired or wanted: the page is asked for a fresh one (TaiWeb.identify).
      const reason = err instanceof WebError ? err.code : "";
      const key = `identify.${reason}`;
      if (!(key in EN)) return false;
      chat.say(t(key as StringKey));
      dispatchEvent(new CustomEvent("tai-web-token-needed", { detail: { identity, reason } }));
      return true;
    },
  });

  /** Offers to keep the anonymous conversation the visitor had before signing in; only their "keep" joins it. */
  const offerKeep = () => {
    const keep = el(document, "button", { type: "button", class: "tai-chip" }, t("merge.keep"));
    const skip = el(document, "button", { type: "button", class: "tai-chip" }, t("merge.skip"));
    const box = el(
      document,
      "div",
      { class: "tai-card tai-merge" },
      el(document, "p", { class: "tai-text" }, t("merge.offer")),
      el(document, "div", { class: "tai-chips" }, keep, skip),
    );
    keep.addEventListener("click", () => {
      box.remove();
      transport.merge().then(
        () => chat.say(t("merge.done")),
        () => chat.say(t("merge.failed")),
      );
    });
    skip.addEventListener("click", () => {
      box.remove();
      transport.skip();
    });
    elements.form.before(box);
  };

  // A token string signs the user in, null (or "") signs them out; anything else is ignored.
  const identify = (v: unknown) => {
    if ((v === null || typeof v === "string") && transport.identify(v || null)) chat.reset();
    renew.hidden = Boolean(transport.user());
  };
  if (token !== undefined) identify(token);
  addEventListener("tai-web-identify", (ev) => identify((ev as CustomEvent).detail));

  const open = () => {
    panel.hidden = false;
    badge.hidden = true;
    launcher.setAttribute("aria-expanded", "true");
    label.textContent = `Close chat: ${title}`;
    // The session is minted and the stream opened on first open only: visitors of the host page
    // who never open the chat cost nothing.
    chat.start();
    chat.focusInput();
  };
  const shut = () => {
    panel.hidden = true;
    launcher.setAttribute("aria-expanded", "false");
    label.textContent = `Open chat: ${title}`;
    launcher.focus();
  };
  launcher.addEventListener("click", () => (panel.hidden ? open() : shut()));
  close.addEventListener("click", shut);
  panel.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") {
      ev.stopPropagation();
      shut();
    }
  });
  document.body.append(host);
}

function main(): void {
  const script = document.currentScript;
  if (!(script instanceof HTMLScriptElement) || !script.src) return;
  const identity = script.dataset.identity ?? "";
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(identity)) {
    console.warn("tai web widget: data-identity must be 1 to 64 characters of A-Z a-z 0-9 _ -");
    return;
  }
  const origin = new URL(script.src, location.href).origin;
  const title = (script.dataset.title ?? "").trim() || "Chat";
  const token = script.dataset.userToken;
  // One global for every widget on the page: it fires the event each widget listens to.
  const w = window as unknown as { TaiWeb?: { identify?: (token: unknown) => void } };
  w.TaiWeb = { ...w.TaiWeb, identify: (v) => dispatchEvent(new CustomEvent("tai-web-identify", { detail: v })) };
  if (document.body) mount(identity, origin, title, token);
  else document.addEventListener("DOMContentLoaded", () => mount(identity, origin, title, token), { once: true });
}

main();
