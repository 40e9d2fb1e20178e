/**
 * A literal header value is a secret typed for one destination: the origin (scheme, host, port) of
 * the URL its declaration sends it to. Reads never show it ("<redacted>"), so an edit that keeps
 * it without sending it again (a manifest replace's "<redacted>", a backup import without the
 * value) must not carry it to another origin: an admin could otherwise re-point a declaration at
 * its own host and receive a credential it never knew. Moving a declaration to a new origin needs
 * the value entered again (docs/security.md "Where a stored secret may go").
 */
import { badRequest } from "../platform/http/errors";
import { REDACTED, type HeaderSpec } from "./env-refs";

/** The origin a URL sends to, e.g. `https://api.example.com:8443`; null when it does not parse. */
export function urlOrigin(url: string): string | null {
  try {
    const origin = new URL(url).origin;
    return origin === "null" ? null : origin;
  } catch {
    return null;
  }
}

/** The message of a kept value refused because the URL's origin changed (names the field, never a value or URL). */
export function movedSecretMessage(field: string): string {
  return `${field}: the URL's origin changed, and a stored literal value only goes to the origin it was entered for; enter the value again`;
}

/**
 * `headers` with each "<redacted>" replaced by the stored literal of the same header. `stored` is the
 * declaration of the same title as it is now (its headers and its URL's origin), `origin` the
 * origin the edited declaration sends to. A placeholder with no stored literal behind it, or whose
 * literal was entered for another origin, is a 400 naming `field.<header>`.
 */
export function keepStoredLiterals(
  headers: HeaderSpec,
  stored: { headers: HeaderSpec; origin: string | null } | undefined,
  origin: string | null,
  field: string,
): HeaderSpec {
  const out: HeaderSpec = {};
  for (const [name, v] of Object.entries(headers)) {
    if (v !== REDACTED) {
      out[name] = v;
      continue;
    }
    const keep = stored?.headers[name];
    if (!stored || typeof keep !== "string")
      throw badRequest(`invalid body: ${field}.${name}: "${REDACTED}" stands for the stored value of this header, and there is none`);
    if (stored.origin === null || stored.origin !== origin) throw badRequest(`invalid body: ${movedSecretMessage(`${field}.${name}`)}`);
    out[name] = keep;
  }
  return out;
}
