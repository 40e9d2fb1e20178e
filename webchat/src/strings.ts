/**
 * The web chat's visible strings: `t(key)` reads the table in force, with `{name}` placeholders
 * filled from `vars`. No table is bundled: the page door writes its language's table into the
 * page, and the widget fetches its own from the service (docs/web-channel-client.md "Languages").
 * A key the table lacks shows as the key itself, which a missing translation makes visible
 * rather than silent.
 */
import type { StringKey } from "../../src/web-chat/strings/en";

let table: Partial<Record<string, string>> = {};
let lang = "en";

/** Puts a language's table (with a site's overrides on top) in force; `locale` also dates the times shown. */
export function setStrings(next: Partial<Record<string, string>>, locale: string): void {
  table = next;
  lang = locale;
}

/** The language in force. */
export function locale(): string {
  return lang;
}

export function t(key: StringKey, vars?: Record<string, string | number>): string {
  const text = table[key] ?? key;
  return vars ? text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m)) : text;
}

/**
 * A site's overrides (`data-strings` on the widget's tag), for `locale`: the object's text values
 * are keys' texts in every language, and an object under a language's name (`"de": {…}`) holds
 * that language's, which win. A key not in `known` (when there is a table to know it by) or a
 * value that is not text is skipped, with a warning that names the key.
 */
export function overrides(raw: string | null, locale: string, known: object | null, warn: (why: string) => void): Record<string, string> {
  const out: Record<string, string> = {};
  let all: Record<string, unknown> = {};
  try {
    all = JSON.parse(raw || "{}");
  } catch {
    warn("ignored: not JSON");
  }
  for (const from of [all, all[locale]])
    if (from && typeof from === "object")
      for (const [key, value] of Object.entries(from))
        if (typeof value === "string" && (!known || key in known)) out[key] = value;
        else if (!(from === all && typeof value === "object")) warn(`${key} ignored`);
  return out;
}
