/** Placeholder for the notification feed object (issue 14); replaced by its implementation. */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env";

export class NotificationFeed extends DurableObject<Env> {}
