/**
 * The web chat's visible strings in English: the key list every other language is checked
 * against, and the table a site's overrides and a missing translation fall back to. Placeholders
 * are `{name}`, filled by the client's `t()` (webchat/src/strings.ts).
 */
export const EN = {
  send: "Send",
  sending: "Sending…",
  "hours.away": "We're away; back {when}",
  "hours.closed": "We're away right now",
  "hours.reply": "Typically replies in {time}",
  "prechat.intro": "Before we start, please tell us a little about yourself.",
  "prechat.submit": "Start chat",
} as const;

/** A visible string's key. */
export type StringKey = keyof typeof EN;
