import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env";

/** One object per rate-bucket key (filled in by the bridge). */
export class AddressBucket extends DurableObject<Env> {}
