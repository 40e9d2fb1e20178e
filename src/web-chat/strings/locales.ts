/**
 * The languages the web chat ships and how a wish list of language tags picks one. Shared by the
 * browser (the widget and the page's script) and the Worker (the page door), so both choose alike;
 * kept free of the tables themselves, which must stay out of the widget's bundle.
 */

/** The shipped languages, by primary language subtag. */
export const LOCALES = ["en", "de", "fr", "es", "pt", "ar", "ja"] as const;
export type Locale = (typeof LOCALES)[number];

/** Languages written right to left. */
const RTL: readonly string[] = ["ar"];

export function isRtl(locale: string): boolean {
  return RTL.includes(locale);
}

/**
 * The first tag of `wishes` (most wanted first) whose language is shipped; English when none is.
 * A region or script falls back to its language (pt-BR → pt, ja-JP → ja); blanks and junk are
 * skipped, so a caller may pass what it has without checking it.
 */
export function pickLocale(wishes: Iterable<string | null | undefined>): Locale {
  for (const wish of wishes) {
    const found = shipped(wish);
    if (found) return found;
  }
  return "en";
}

/** The shipped language of one tag (its region or script dropped), or null. */
export function shipped(tag: string | null | undefined): Locale | null {
  const lang = typeof tag === "string" ? tag.trim().toLowerCase().split(/[-_]/)[0] : "";
  return (LOCALES as readonly string[]).includes(lang) ? (lang as Locale) : null;
}
