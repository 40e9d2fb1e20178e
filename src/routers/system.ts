/** The doors of backend, fleet and system status (issue 15). */
import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";

export const systemRouter = new Hono<AppEnv>();
