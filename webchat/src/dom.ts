/**
 * Element building for the chat. Text only ever enters as text nodes or attribute values, never as
 * markup: whatever a bot, an operator or a visitor writes stays text. No innerHTML anywhere, which
 * also keeps the widget working on host pages that enforce Trusted Types.
 */
export type Kid = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  doc: Document,
  tag: K,
  attrs: Record<string, string | boolean | undefined> = {},
  ...kids: Kid[]
): HTMLElementTagNameMap[K] {
  const e = doc.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === true) e.setAttribute(name, "");
    else if (typeof value === "string") e.setAttribute(name, value);
  }
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    e.append(typeof k === "string" ? doc.createTextNode(k) : k);
  }
  return e;
}

/** `url` when it is an absolute http(s) URL, so no `javascript:` or `data:` link is ever made. */
export function webUrl(url: unknown, httpsOnly = false): string | null {
  if (typeof url !== "string") return null;
  try {
    const u = new URL(url);
    if (u.protocol === "https:" || (!httpsOnly && u.protocol === "http:")) return u.href;
  } catch {
    // Not a URL: shown as text by the caller, if at all.
  }
  return null;
}

const ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/** A random id of 16 characters of [A-Za-z0-9_-] (64 symbols: each byte's low 6 bits, unbiased). */
export function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let out = "";
  for (const b of bytes) out += ID_CHARS[b & 63];
  return out;
}
