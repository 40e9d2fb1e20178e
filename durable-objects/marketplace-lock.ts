/** Placeholder for the fleet marketplace lock object (issue 14); replaced by its implementation. */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env";

export class MarketplaceLock extends DurableObject<Env> {}
