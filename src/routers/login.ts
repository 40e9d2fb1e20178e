/** The doors of login and claim links (issue 15). */
import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";

export const loginRouter = new Hono<AppEnv>();
