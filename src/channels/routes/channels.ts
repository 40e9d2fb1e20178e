/** `GET /api/channels`: the configured channels, their capabilities and split caps (decisions §11). */
import { Hono } from "hono";
import { z } from "zod";
import { channelListing } from "../registry";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";

export const channelsRouter = new Hono<AppEnv>();

const capabilities = z.object({
  media: z.boolean(),
  location: z.boolean(),
  template: z.boolean(),
  interactive: z.boolean(),
  form: z.boolean(),
  typing: z.boolean(),
});

addRoute(
  channelsRouter,
  {
    method: "get",
    path: "/api/channels",
    summary: "List the configured channels with their capabilities and max_message_chars",
    description:
      "A channel is listed only when all of its CHANNEL_* secrets are set. `max_message_chars` is null when " +
      "CONVERSATIONS_MAX_MESSAGE_CHARS lacks the channel (its sends then fail loudly).",
    area: "channels",
    auth: { tag: "channels" },
    response: z.object({
      channels: z.array(z.object({ name: z.string(), capabilities, max_message_chars: z.number().int().nullable() })),
    }),
  },
  (c) => ({ channels: channelListing(c.env, c.get("settings").conversations.maxMessageChars) }),
);
