/**
 * The web chat's visible strings in English: the key list every other language is checked
 * against, and the table a site's overrides and a missing translation fall back to. Placeholders
 * are `{name}`, filled by the client's `t()` (webchat/src/strings.ts).
 */
export const EN = {
  send: "Send",
  sending: "Sending…",
  "attach.add": "Attach a file",
  "attach.list": "Files to send",
  "attach.remove": "Remove {name}",
  "attach.done": "{name} is attached.",
  "attach.failed": "{name} was not attached: {why}.",
  "attach.wait": "Wait until the files are attached.",
  "attach.gone": "{name} is no longer available.",
  "attach.file": "File",
} as const;

/** A visible string's key. */
export type StringKey = keyof typeof EN;
