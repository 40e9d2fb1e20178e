/** The notifications doors (issue 14). */
import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";

export const notificationsRouter = new Hono<AppEnv>();
