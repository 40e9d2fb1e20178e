/**
 * AccessEpoch: one object per (subject, replica) holding the token an isolate validates its cached
 * key and route reads against (src/platform/epochs/rpc.ts). Memory only: a fresh instance mints a
 * new token, so an evicted object makes entries stale rather than current.
 */
import { DurableObject } from "cloudflare:workers";
import type { AccessEpochRpc } from "../src/platform/epochs/rpc";
import type { Env } from "../src/platform/env";

export class AccessEpoch extends DurableObject<Env> implements AccessEpochRpc {
  private readonly incarnation = crypto.randomUUID();
  private bumps = 0;

  async read(): Promise<string> {
    return `${this.incarnation}/${this.bumps}`;
  }

  async bump(): Promise<void> {
    this.bumps++;
  }
}
