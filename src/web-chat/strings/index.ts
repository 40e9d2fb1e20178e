/**
 * Every shipped language's table, for the Worker: the strings door serves them
 * (`GET /api/channels/web/strings/{locale}`) and the page door writes its markup and its script's
 * table in the visitor's language. The browser bundles import only ./locales and the key type, so
 * no table rides inside widget.js.
 */
import { AR } from "./ar";
import { DE } from "./de";
import { EN, type StringKey } from "./en";
import { ES } from "./es";
import { FR } from "./fr";
import { JA } from "./ja";
import { type Locale, pickLocale } from "./locales";
import { PT } from "./pt";

export const STRING_TABLES: Readonly<Record<Locale, Readonly<Record<StringKey, string>>>> = {
  en: EN,
  de: DE,
  fr: FR,
  es: ES,
  pt: PT,
  ar: AR,
  ja: JA,
};

/** `text` with each `{name}` of `vars` filled in (others left as written), as the client's `t()` does. */
export function fill(text: string, vars: Record<string, string | number> = {}): string {
  return text.replace(/\{(\w+)\}/g, (m, name: string) => (Object.hasOwn(vars, name) ? String(vars[name]) : m));
}

/**
 * What the tables' version is the digest of. scripts/build-console.mjs bakes the same digest into
 * widget.js and chat.js, which ask for `?v=<version>`: the door serves a matching request as
 * immutable, so a table changes for a visitor exactly when the scripts that read it do.
 */
export function stringsDigestInput(): string {
  return JSON.stringify(STRING_TABLES);
}

let versionOnce: Promise<string> | null = null;

/** The first 16 hex digits of the SHA-256 of `stringsDigestInput()`, computed once per isolate. */
export function stringsVersion(): Promise<string> {
  versionOnce ??= crypto.subtle.digest("SHA-256", new TextEncoder().encode(stringsDigestInput())).then((d) =>
    [...new Uint8Array(d)]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("")
      .slice(0, 16),
  );
  return versionOnce;
}

/**
 * The languages an `Accept-Language` header asks for, most wanted first (by `q`, ties in header
 * order; `q=0` and malformed entries dropped). Bounded: a long header is read for its first 32 entries.
 */
export function acceptLanguages(header: string | null | undefined): string[] {
  if (!header) return [];
  const wishes: Array<{ tag: string; q: number; i: number }> = [];
  for (const [i, part] of header.split(",").slice(0, 32).entries()) {
    const [tag = "", ...opts] = part.trim().split(";");
    let q = 1;
    for (const o of opts) {
      const [k, v] = o.trim().split("=");
      if (k === "q") q = Number(v);
    }
    if (/^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(tag.trim()) && q > 0 && q <= 1) wishes.push({ tag: tag.trim(), q, i });
  }
  return wishes.sort((a, b) => b.q - a.q || a.i - b.i).map((w) => w.tag);
}

/** The language of a page: the link's choice, then the person's locale, then the browser's languages. */
export function pageLocale(linkChoice: string | null, personLocale: string | null, acceptLanguage: string | null | undefined): Locale {
  return pickLocale([linkChoice, personLocale, ...acceptLanguages(acceptLanguage)]);
}
