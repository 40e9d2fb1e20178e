/**
 * The first-contact greeting template (spec §2.5, decisions §12): plain text that may reference
 * one placeholder, `{pairing_code}`, minted when the greeting is sent. The syntax is the
 * reference's replacement-field syntax, restricted: `{{` and `}}` are literal braces, `{pairing_code}`
 * is the only field, and a field carries no conversion or format spec. Pure; parsed at the config
 * door (a refusal is 400) and rendered at greeting time.
 */

/** The one placeholder a greeting may use. */
export const PAIRING_CODE_FIELD = "pairing_code";

/** A parsed template: literal text and the placeholder, in order. */
export type GreetingPart = { text: string } | { field: typeof PAIRING_CODE_FIELD };

export type GreetingParse = { ok: true; parts: GreetingPart[] } | { ok: false; error: string };

/** Parses `template`; the error names the defect, never the template's text. */
export function parseGreetingTemplate(template: string): GreetingParse {
  if (template.trim() === "") return { ok: false, error: "must not be blank (null is the spelling for no greeting)" };
  const parts: GreetingPart[] = [];
  let text = "";
  for (let i = 0; i < template.length; i++) {
    const ch = template[i];
    if (ch === "}") {
      if (template[i + 1] === "}") {
        text += "}";
        i++;
        continue;
      }
      return { ok: false, error: "has an unbalanced '}' (write '}}' for a literal brace)" };
    }
    if (ch !== "{") {
      text += ch;
      continue;
    }
    if (template[i + 1] === "{") {
      text += "{";
      i++;
      continue;
    }
    const close = template.indexOf("}", i + 1);
    if (close < 0) return { ok: false, error: "has an unbalanced '{' (write '{{' for a literal brace)" };
    const field = template.slice(i + 1, close);
    if (field === "") return { ok: false, error: "has an empty placeholder {}; the only placeholder is {pairing_code}" };
    if (field.includes("{")) return { ok: false, error: "has an unbalanced '{' (write '{{' for a literal brace)" };
    if (field !== PAIRING_CODE_FIELD) {
      const spec = /[!:]/.test(field) && field.split(/[!:]/)[0] === PAIRING_CODE_FIELD;
      return {
        ok: false,
        error: spec ? "{pairing_code} takes no conversion or format spec" : "uses an unknown placeholder; the only placeholder is {pairing_code}",
      };
    }
    if (text) parts.push({ text });
    text = "";
    parts.push({ field: PAIRING_CODE_FIELD });
    i = close;
  }
  if (text) parts.push({ text });
  return { ok: true, parts };
}

/** Does the template reference `{pairing_code}` (so greeting it mints a code)? */
export function needsPairingCode(parts: GreetingPart[]): boolean {
  return parts.some((p) => "field" in p);
}

/** Renders parsed parts with the minted code. */
export function renderGreeting(parts: GreetingPart[], pairingCode: string | null): string {
  return parts.map((p) => ("field" in p ? (pairingCode ?? "") : p.text)).join("");
}
