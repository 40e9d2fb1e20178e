/**
 * The web chat's languages (docs/channels.md "Languages"): every shipped table has every key and
 * the same placeholders as English, the strings door serves them cacheably to any origin, and the
 * page door writes the page in the link's language, else the visitor's person's, else the
 * browser's, with the table for its script and the direction of the language; the config door
 * tells the widget its visitor's person's locale.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRoute } from "../helpers/bridge";
import { BASE, admin, call, dispatch, mintKey, uniq } from "../helpers/http";
import { declareTool } from "../operator/helpers";
import { EN } from "../../src/web-chat/strings/en";
import { STRING_TABLES, acceptLanguages, fill, stringsVersion } from "../../src/web-chat/strings/index";
import { LOCALES, isRtl, pickLocale } from "../../src/web-chat/strings/locales";
import { personDirectoryStub } from "../../src/persons/rpc";

const ORIGIN = new URL(BASE).origin;
const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

async function webRoute(multichannel = false) {
  const title = uniq("lang").replace(/[^A-Za-z0-9_-]/g, "-");
  await declareTool(title, `https://${title}.example/run`);
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const identity = title;
  const r = await createRoute({ door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: title, execution_key: k.user_id });
  if (multichannel) {
    const put = await call("PUT", `/api/conversation-configs/tool/${title}`, {
      key: await admin(),
      body: { target_kind: "tool", target_name: title, multichannel: true },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  }
  return { ...r, identity, title };
}

async function openPage(identity: string, query = "", headers: Record<string, string> = {}) {
  const res = await dispatch(`${BASE}/api/channels/web/chat/${identity}${query}`, { headers: { "sec-fetch-mode": "navigate", ...headers } });
  const html = await res.text();
  return { res, html, cookie: (res.headers.get("set-cookie") ?? "").split(";")[0] };
}

/** The page's `<html lang dir>` and the table its script reads. */
function pageLanguage(html: string) {
  const root = html.match(/<html lang="([^"]+)" dir="(ltr|rtl)"/);
  const table = html.match(/<script type="application\/json" id="tai-strings">([^<]*)<\/script>/);
  return { lang: root?.[1], dir: root?.[2], table: table ? JSON.parse(table[1]) : null };
}

describe("the string tables", () => {
  it("ship seven languages, each with every English key, the same placeholders and no blank text", () => {
    expect([...LOCALES].sort()).toEqual(["ar", "de", "en", "es", "fr", "ja", "pt"]);
    for (const locale of LOCALES) {
      const table = STRING_TABLES[locale];
      expect(Object.keys(table).sort(), locale).toEqual(Object.keys(EN).sort());
      for (const [key, text] of Object.entries(table)) {
        expect(text.trim(), `${locale} ${key}`).not.toBe("");
        expect(placeholders(text), `${locale} ${key}`).toEqual(placeholders(EN[key as keyof typeof EN]));
      }
    }
  });

  it("picks a language from a wish list: a region falls back to its language, an unshipped one to the next wish, English last", () => {
    expect(pickLocale(["pt-BR"])).toBe("pt");
    expect(pickLocale(["it-IT", "de-CH", "en"])).toBe("de");
    expect(pickLocale([null, "", " ja ", "fr"])).toBe("ja");
    expect(pickLocale(["zh-Hant", "x-klingon"])).toBe("en");
    expect(isRtl("ar")).toBe(true);
    expect(isRtl("de")).toBe(false);
    expect(acceptLanguages("fr;q=0.5, de-DE, en;q=0.9, it;q=0, *;q=0.1, bad tag")).toEqual(["de-DE", "en", "fr"]);
    expect(acceptLanguages(null)).toEqual([]);
    expect(fill("{a} and {b}", { a: 1 })).toBe("1 and {b}");
  });
});

describe("GET /api/channels/web/strings/{locale}", () => {
  it("answers a language's table to any origin; with the current version it is immutable, otherwise briefly cached", async () => {
    const v = await stringsVersion();
    expect(v).toMatch(/^[0-9a-f]{16}$/);
    for (const locale of LOCALES) {
      const res = await dispatch(`${BASE}/api/channels/web/strings/${locale}?v=${v}`, { headers: { origin: "https://shop.example" } });
      expect(res.status, locale).toBe(200);
      expect(res.headers.get("content-type")).toContain("application/json");
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(await res.json()).toEqual(STRING_TABLES[locale]);
    }
    for (const query of ["", "?v=0000000000000000"]) {
      const res = await dispatch(`${BASE}/api/channels/web/strings/ar${query}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toBe("public, max-age=300");
      await res.body?.cancel();
    }
  });

  it("refuses an unshipped language and a version that is not hex with a 400 naming the field", async () => {
    for (const [path, field] of [
      ["/api/channels/web/strings/it", "locale"],
      ["/api/channels/web/strings/pt-BR", "locale"],
      ["/api/channels/web/strings/de?v=<script>", "v"],
    ] as const) {
      const r = await call("GET", path);
      expect(r.status, path).toBe(400);
      expect(JSON.stringify(r.body), path).toContain(field);
      expect(JSON.stringify(r.body), path).not.toContain("<script>");
    }
  });
});

describe("the chat page's language", () => {
  it("follows the browser's languages, written server-side with the table for its script", async () => {
    const r = await webRoute();
    const de = await openPage(r.identity, "", { "accept-language": "de-CH, de;q=0.9, en;q=0.5" });
    expect(de.res.status).toBe(200);
    const got = pageLanguage(de.html);
    expect(got).toEqual({ lang: "de", dir: "ltr", table: STRING_TABLES.de });
    expect(de.html).toContain(">Neue Unterhaltung</button>");
    expect(de.html).toContain("<title>Chat</title>");
    const none = pageLanguage((await openPage(r.identity)).html);
    expect([none.lang, none.dir]).toEqual(["en", "ltr"]);
  });

  it("takes ?tai_locale= first, lays Arabic out right to left, and escapes its table for the data block", async () => {
    const r = await webRoute();
    const ar = await openPage(r.identity, "?tai_locale=ar", { "accept-language": "de" });
    const got = pageLanguage(ar.html);
    expect([got.lang, got.dir]).toEqual(["ar", "rtl"]);
    expect(got.table).toEqual(STRING_TABLES.ar);
    expect(ar.html).toContain("<title>الدردشة</title>");
    // An unshipped choice falls through to the browser's language.
    expect(pageLanguage((await openPage(r.identity, "?tai_locale=it", { "accept-language": "ja" })).html).lang).toBe("ja");
  });

  it("writes a refusal page in the visitor's language", async () => {
    const unknown = await openPage("no-such-desk-lang", "", { "accept-language": "fr-FR" });
    expect(unknown.res.status).toBe(404);
    expect(unknown.html).toContain('<html lang="fr" dir="ltr">');
    expect(unknown.html).toContain(STRING_TABLES.fr["page.unknown"]);
    const fetched = await dispatch(`${BASE}/api/channels/web/chat/no-such-desk-lang?tai_locale=ar`, { headers: { "sec-fetch-mode": "cors" } });
    expect(fetched.status).toBe(403);
    expect(await fetched.text()).toContain('<html lang="ar" dir="rtl">');
  });

  it("speaks a returning visitor's person's locale, before the browser's, and the config door tells the widget", async () => {
    const r = await webRoute(true);
    const first = await openPage(r.identity, "", { "accept-language": "en" });
    const headers = { origin: ORIGIN, cookie: first.cookie };
    const before = await call("POST", "/api/channels/web/config", { body: { identity: r.identity }, headers });
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    expect(before.body.data.locale).toBeNull();

    // The visitor's person, as a first message would make it, with a locale an operator set.
    const visitor = first.cookie.split("=")[1].split(".")[0];
    const directory = personDirectoryStub(env, "tool", r.title);
    const { person } = await directory.ensure(
      { target: { kind: "tool", name: r.title }, address: { door: "channel", channel: "web", our_identity: r.identity, address: visitor }, route_name: r.name },
      "pt-BR",
      Date.now(),
    );
    expect(person.locale).toBe("pt-BR");
    const after = await call("POST", "/api/channels/web/config", { body: { identity: r.identity }, headers });
    expect(after.body.data.locale).toBe("pt-BR");
    const again = await openPage(r.identity, "", { cookie: first.cookie, "accept-language": "en" });
    expect(pageLanguage(again.html).lang).toBe("pt");
    // The link's choice still comes first.
    expect(pageLanguage((await openPage(r.identity, "?tai_locale=ja", { cookie: first.cookie })).html).lang).toBe("ja");
  });
});
