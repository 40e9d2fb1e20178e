/**
 * Twilio rich parts: media only (MMS). Each message carries up to 10 `MediaUrl` values; item
 * captions, which MMS cannot attach per item, ride as the message `Body` (one per line).
 */
import type { SendDeps, SendResult } from "../adapter";
import type { RichSender, RichStep } from "./types";

/** Twilio's limit of media per message. */
export const TWILIO_MAX_MEDIA_PER_MESSAGE = 10;

export function makeTwilioRich(post: (form: URLSearchParams, deps: SendDeps) => Promise<SendResult>): RichSender {
  return {
    takesBody: () => false,
    plan(part) {
      const media = part.media ?? [];
      const steps: RichStep[] = [];
      for (let i = 0; i < media.length; i += TWILIO_MAX_MEDIA_PER_MESSAGE) {
        const group = media.slice(i, i + TWILIO_MAX_MEDIA_PER_MESSAGE);
        const body = group
          .map((m) => m.caption)
          .filter((c): c is string => Boolean(c))
          .join("\n");
        steps.push({ media_urls: group.map((m) => m.url), ...(body ? { body } : {}) });
      }
      return { ok: true, steps };
    },
    send(step, args, deps) {
      const form = new URLSearchParams({ To: args.to, From: args.from });
      if (typeof step.body === "string") form.append("Body", step.body);
      for (const url of step.media_urls as string[]) form.append("MediaUrl", url);
      return post(form, deps);
    },
  };
}
