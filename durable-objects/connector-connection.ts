/** Placeholder for the connector connection object (issue 14); replaced by its implementation. */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env";

export class ConnectorConnection extends DurableObject<Env> {}
