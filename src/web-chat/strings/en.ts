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
  "hours.away": "We're away; back {when}",
  "hours.closed": "We're away right now",
  "hours.reply": "Typically replies in {time}",
  "identify.user_token_expired": "Your sign-in has expired. Waiting for the site to sign you in again…",
  "identify.user_unverified": "The site could not confirm who you are, so this chat cannot open. Try signing in again.",
  "identify.verification_required": "Sign in to the site to use this chat.",
  "merge.offer": "You chatted here before signing in. Keep that conversation with your account?",
  "merge.keep": "Keep it",
  "merge.skip": "No, thanks",
  "merge.done": "Your earlier conversation is kept with your account.",
  "merge.failed": "Your earlier conversation could not be kept.",
  "prechat.intro": "Before we start, please tell us a little about yourself.",
  "prechat.submit": "Start chat",
} as const;

/** A visible string's key. */
export type StringKey = keyof typeof EN;
