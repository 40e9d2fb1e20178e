/**
 * Entry of the embeddable widget (public/web/widget.js, docs/web-channel-client.md). A host page
 * adds it with
 *   <script src="https://<service>/api/channels/web/widget.js" data-identity="desk" async></script>
 * and gets a launcher button and a chat panel. Built as a classic script (not a module) so that
 * `document.currentScript` names the tag: its `data-identity` picks the web route, its `src` gives
 * the service's origin, which every request goes to, and its other `data-*` attributes set the
 * language and the look (docs/channels.md, "The widget's attributes").
 *
 * Everything lives in a shadow root, so the host page's styles and the widget's do not leak into
 * each other. The stylesheet is webchat/chat.css, inlined at build time (__TAI_WEB_CSS__) and
 * adopted as a constructed stylesheet: that needs no `style-src` on the host page's CSP and no
 * request, so the launcher is styled the moment it appears. A browser without constructed
 * stylesheets gets a <link> to the service's copy in this build's version (__TAI_CSS_V__).
 *
 * No language's table is bundled: the widget fetches the one it needs from the service
 * (`strings/{locale}?v=…`, cached for good per version). If that fails it runs on FALLBACK, the
 * little English a visitor needs to open the chat, write and send.
 *
 * A page behind the site's login signs its user in (docs/web-channel-client.md, "Signed-in
 * users"): `data-user-token` on the tag, and later `TaiWeb.identify(token)` or the
 * `tai-web-identify` event (null signs out). When the service refuses a token or wants one, the
 * widget says so and fires `tai-web-token-needed` on window, so the page can hand it a fresh one.
 */
import { isRtl, pickLocale, shipped } from "../../src/web-chat/strings/locales";
import { el } from "./dom";
import { overrides, setStrings, t } from "./strings";
import type { StringKey } from "../../src/web-chat/strings/en";
import { applyTheme } from "./theme";
import { bearerTransport, DOOR_BASE, WebError } from "./transport";
import { buildChat, Chat, type Config } from "./ui";

/** The stylesheet's version (scripts/build-console.mjs), which the asset door serves as immutable. */
declare const __TAI_CSS_V__: string;
/** The stylesheet itself, minified (scripts/build-console.mjs). */
declare const __TAI_WEB_CSS__: string;
/** The string tables' version (src/web-chat/strings/index.ts), baked in by scripts/build-console.mjs. */
declare const __TAI_STRINGS_V__: string;

const SVG = "http://www.w3.org/2000/svg";

/** The launcher's icons by name (`data-icon`): a path, drawn filled or, when marked, as a line. */
const ICONS: Record<string, [d: string, line?: 1]> = {
  chat: ["M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"],
  help: ["M12 2a10 10 0 1 0 0 20a10 10 0 1 0 0-20zM9.1 9a3 3 0 0 1 5.8 1c0 2-3 3-3 3M12 17h.01", 1],
  mail: ["M3 5h18v14H3zM3 6l9 7 9-7", 1],
};

/** The English a widget runs on when its table could not be fetched: enough to open the chat, write and send. */
const FALLBACK: Record<string, string> = { send: "Send", message: "Message", title: "Chat", "launcher.open": "Open chat: {title}" };

/** The refusals of a user proof the page can mend with a fresh token: each has an `identify.<code>` string. */
const IDENTIFY = ["user_token_expired", "user_unverified", "verification_required"];

const warn = (name: string, why: string) => console.warn(`tai web widget: data-${name} ${why}`);

/** A speech bubble or another icon of ICONS, drawn with DOM calls (no markup parsing on the host page). */
function icon(name: string): SVGSVGElement {
  const [d, line] = ICONS[name];
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  if (line) svg.setAttribute("class", "tai-stroke");
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", d);
  svg.append(path);
  return svg;
}

/** Credentials never go to the service from a host page, and its path never in a Referer. */
const CORS: RequestInit = { credentials: "omit", referrerPolicy: "origin" };

function styles(shadow: ShadowRoot, origin: string): void {
  if ("adoptedStyleSheets" in shadow && "replaceSync" in CSSStyleSheet.prototype) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(__TAI_WEB_CSS__);
    shadow.adoptedStyleSheets = [sheet];
  } else shadow.append(el(document, "link", { rel: "stylesheet", href: new URL(`${DOOR_BASE}assets/chat.css?v=${__TAI_CSS_V__}`, origin).href }));
}

/** `attr(name)`: the tag's `data-<name>`. */
function mount(identity: string, origin: string, attr: (name: string) => string | null): void {
  // One widget per service and identity, even if the snippet is pasted twice; two services may
  // both have a `desk`, and each keeps its own session (token-key.ts).
  for (const existing of document.querySelectorAll("[data-tai-web]")) {
    if (existing.getAttribute("data-tai-web") === identity && existing.getAttribute("data-tai-web-service") === origin) return;
  }
  const host = el(document, "div", { "data-tai-web": identity, "data-tai-web-service": origin });
  const shadow = host.attachShadow({ mode: "open" });
  styles(shadow, origin);
  applyTheme(host, attr, warn);

  // Cached by the browser for good (the version is in the URL); a failed fetch is tried again at
  // the next need, the panel's first opening.
  const load = (): Promise<Record<string, string> | null> =>
    fetch(new URL(`${DOOR_BASE}strings/${lang}?v=${__TAI_STRINGS_V__}`, origin), CORS)
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null);

  const named = (attr("title") ?? "").trim();
  const title = () => named || t("title");
  let lang = pickLocale([attr("locale"), ...navigator.languages]);
  const rtl = () => isRtl(lang);

  let iconName = attr("icon") ?? "chat";
  if (!Object.hasOwn(ICONS, iconName)) {
    warn("icon", "ignored");
    iconName = "chat";
  }
  const position = attr("position");
  if (position && position !== "bottom-left" && position !== "bottom-right") warn("position", "ignored");
  // Where the launcher sits is settled here, once: it never jumps when the language changes later.
  const left = position === "bottom-left" || (position !== "bottom-right" && rtl());

  const label = el(document, "span", { class: "tai-sr" });
  const unread = el(document, "span", { class: "tai-sr" });
  const badge = el(document, "span", { class: "tai-badge", hidden: true }, unread);
  const launcher = el(
    document,
    "button",
    { type: "button", class: "tai-launcher", "aria-expanded": "false", "aria-controls": "tai-w-panel" },
    icon(iconName),
    label,
    badge,
  );
  const box = el(document, "div", { class: left ? "tai-widget tai-left" : "tai-widget" }, launcher);
  shadow.append(box);

  /** Puts `lang`'s strings (the site's overrides on top) in force and names the launcher in them. */
  const use = async () => {
    const want = lang;
    const table = await load();
    // A slower fetch for a language since replaced (the person's, at the first opening) is dropped.
    if (want !== lang) return;
    const mine = overrides(attr("strings"), lang, table, (why) => warn("strings", why));
    setStrings({ ...FALLBACK, ...table, ...mine }, lang);
    box.lang = lang;
    box.dir = rtl() ? "rtl" : "ltr";
    label.textContent = t(panel && !panel.hidden ? "launcher.close" : "launcher.open", { title: title() });
    unread.textContent = ` ${t("launcher.unread")}`;
  };

  let panel: HTMLElement | null = null;
  let chat: Chat | null = null;
  let building: Promise<void> | null = null;
  let renew: HTMLElement | null = null;
  /** A minted session offered to keep the anonymous conversation before the panel was built. */
  let offered = false;
  // A signed-in user's conversation is the same on every device: no "New conversation" while it lives.
  const signedIn = () => {
    if (renew) renew.hidden = Boolean(transport.user());
  };
  const transport = bearerTransport(origin, identity, (offer) => {
    signedIn();
    if (offer) panel ? offerKeep() : (offered = true);
  });
  // The route's config as the panel's first opening read it for the person's locale: handed to the
  // chat once for its hours line and pre-chat form, so one opening asks the door once. A new
  // conversation's read is the chat's own.
  let config: Promise<Config & { locale?: string | null }> | undefined;
  const configOnce = () => (config ??= transport.post("config", {}));
  const takeConfig = () => {
    const got = config;
    config = undefined;
    return got;
  };

  /**
   * The panel, built when the visitor first opens it: by then the session exists, so the person's
   * locale can be asked for (`POST config`) when the tag names no shipped language.
   */
  const build = async () => {
    if (!shipped(attr("locale"))) {
      try {
        lang = pickLocale([(await configOnce()).locale, ...navigator.languages]);
      } catch {
        // The chat itself will say what is wrong with the service; the language stays.
        config = undefined;
      }
    }
    await use();
    const { root, head, elements } = buildChat(document, title(), "tai-w");
    const close = el(document, "button", { type: "button", class: "tai-close", "aria-label": t("close") }, "×");
    head.append(close);
    const made = el(document, "div", { id: "tai-w-panel", class: "tai-panel", role: "dialog", "aria-labelledby": "tai-w-title", hidden: true }, root);
    box.prepend(made);
    renew = elements.renew;
    signedIn();
    const talk: Chat = new Chat(transport, elements, {
      onEntry: (entry, live) => {
        if (live && entry.role !== "visitor" && made.hidden) badge.hidden = false;
      },
      onSessionLost: (err) => {
        // A proof refused, expired or wanted: the page is asked for a fresh one (TaiWeb.identify).
        const reason = err instanceof WebError ? err.code : "";
        if (!IDENTIFY.includes(reason)) return false;
        talk.say(t(`identify.${reason}` as StringKey));
        dispatchEvent(new CustomEvent("tai-web-token-needed", { detail: { identity, reason } }));
        return true;
      },
      config: takeConfig,
    });
    chat = talk;
    form = elements.form;
    close.addEventListener("click", shut);
    made.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") {
        ev.stopPropagation();
        shut();
      }
    });
    panel = made;
    if (offered) offerKeep();
  };

  let form: HTMLFormElement | null = null;
  /** Offers to keep the anonymous conversation the visitor had before signing in; only their "keep" joins it. */
  const offerKeep = () => {
    const keep = el(document, "button", { type: "button", class: "tai-chip" }, t("merge.keep"));
    const skip = el(document, "button", { type: "button", class: "tai-chip" }, t("merge.skip"));
    const offer = el(
      document,
      "div",
      { class: "tai-card tai-merge" },
      el(document, "p", { class: "tai-text" }, t("merge.offer")),
      el(document, "div", { class: "tai-chips" }, keep, skip),
    );
    keep.addEventListener("click", () => {
      offer.remove();
      transport.merge().then(
        () => chat?.say(t("merge.done")),
        () => chat?.say(t("merge.failed")),
      );
    });
    skip.addEventListener("click", () => {
      offer.remove();
      transport.skip();
    });
    form?.before(offer);
  };

  // A token string signs the user in, null (or "") signs them out; anything else is ignored.
  const identify = (v: unknown) => {
    if ((v === null || typeof v === "string") && transport.identify(v || null)) chat?.reset();
    signedIn();
  };
  const token = attr("user-token");
  if (token !== null) identify(token);
  addEventListener("tai-web-identify", (ev) => identify((ev as CustomEvent).detail));

  const open = async () => {
    if (!panel) {
      launcher.setAttribute("aria-busy", "true");
      await (building ??= build());
      launcher.removeAttribute("aria-busy");
    }
    if (!panel || !chat) return;
    panel.hidden = false;
    badge.hidden = true;
    launcher.setAttribute("aria-expanded", "true");
    label.textContent = t("launcher.close", { title: title() });
    // The session is minted and the stream opened on first open only: visitors of the host page
    // who never open the chat cost nothing.
    chat.start();
    chat.focusInput();
  };
  const shut = () => {
    if (!panel) return;
    panel.hidden = true;
    launcher.setAttribute("aria-expanded", "false");
    label.textContent = t("launcher.open", { title: title() });
    launcher.focus();
  };
  launcher.addEventListener("click", () => (panel && !panel.hidden ? shut() : void open()));
  document.body.append(host);
  void use();
}

function main(): void {
  const script = document.currentScript;
  if (!(script instanceof HTMLScriptElement) || !script.src) return;
  const attr = (name: string) => script.getAttribute(`data-${name}`);
  const identity = attr("identity") ?? "";
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(identity)) {
    warn("identity", "must be 1 to 64 of A-Z a-z 0-9 _ -");
    return;
  }
  const origin = new URL(script.src, location.href).origin;
  // One global for every widget on the page: it fires the event each widget listens to.
  const w = window as unknown as { TaiWeb?: { identify?: (token: unknown) => void } };
  w.TaiWeb = { ...w.TaiWeb, identify: (v) => dispatchEvent(new CustomEvent("tai-web-identify", { detail: v })) };
  if (document.body) mount(identity, origin, attr);
  else document.addEventListener("DOMContentLoaded", () => mount(identity, origin, attr), { once: true });
}

main();
