import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env";

/** One object per thread id: the single writer of that thread (filled in by the bridge). */
export class ThreadObject extends DurableObject<Env> {}
