/**
 * The person half of a turn on a multichannel target (decisions §12): pairing turns and
 * the first-contact greeting. A message whose text asks to pair (`/link`, `/unlink`, a
 * `LINK-XXXXXXXX` token) is answered here and never runs the target, in either control mode; the
 * greeting is prepended to whatever the first contact's turn answered. Both talk to the target's
 * PersonDirectory; a fault there is the turn's error outcome.
 */
import type { TurnInbound } from "../model/payload";
import type { AnswerRecord } from "../model/record";
import type { Route } from "../model/route";
import { type TurnOutcome, errorOutcome } from "./turn-runner";
import { encodePrincipal } from "../../shared/thread-id";
import { type Arrival, personDirectoryStub } from "../../persons/rpc";
import type { Env } from "../../platform/env";
import { needsPairingCode, parseGreetingTemplate, renderGreeting } from "../../persons/greeting-template";
import { type DoorAddress, NETWORK_PARTY_PREFIX, PAIRING_REPLIES, type PairingIntent, classifyInbound } from "../../persons/pairing";
import { must } from "../../platform/must";

/** The pairing intent of a turn's inbound: only a message on a multichannel target can have one. */
export function pairingIntentOf(inbound: TurnInbound): PairingIntent {
  return inbound.person && inbound.kind === "message" ? classifyInbound(inbound.text) : { kind: "text" };
}

/** Where a record's inbound came from, as its target's person directory keys it. */
export function doorAddressOf(rec: Pick<AnswerRecord, "door" | "channel" | "our_identity" | "client_address" | "caller_principal">): DoorAddress {
  if (rec.door === "channel") return { door: "channel", channel: rec.channel ?? "", our_identity: rec.our_identity ?? "", address: rec.client_address ?? "" };
  return { door: "api", address: `${encodePrincipal(rec.caller_principal ?? "")}/${rec.client_address ?? ""}` };
}

/**
 * Who answers for a redeem attempt: the api caller's key, the network a web visitor writes from
 * (`guessKey`: visitor ids are free, so a fresh one must not buy fresh guesses), or the channel's
 * attested sender (never a rotatable address).
 */
export function accountableParty(rec: Pick<AnswerRecord, "door" | "channel" | "caller_principal" | "client_address">, guessKey: string | null = null): string {
  if (rec.door === "api") return `api:${rec.caller_principal ?? ""}`;
  if (guessKey) return `${NETWORK_PARTY_PREFIX}${rec.channel ?? ""}:${guessKey}`;
  return `channel:${rec.channel ?? ""}:${rec.client_address ?? ""}`;
}

const isoUtc = (ms: number) => new Date(ms).toISOString().replace("Z", "+00:00");

/** One turn's person work, bound to its route, record and clock. */
export class PersonTurn {
  /** The code a first contact's greeting minted (a same-turn /link repeats it) and its expiry. */
  private greetingCode: string | null = null;
  private greetingExpiresAt: number | null = null;

  constructor(
    private readonly env: Env,
    private readonly route: Pick<Route, "route_name" | "target_kind" | "target_name">,
    private readonly rec: AnswerRecord,
    private readonly nowMs: number,
    /** The inbound's `guess_key` (src/conversations/model/payload.ts), when its door set one. */
    private readonly guessKey: string | null = null,
  ) {}

  private arrival(): Arrival {
    return { target: { kind: this.route.target_kind, name: this.route.target_name }, address: doorAddressOf(this.rec), route_name: this.route.route_name };
  }

  private directory() {
    return personDirectoryStub(this.env, this.route.target_kind, this.route.target_name);
  }

  /** Answers a pairing intent; never runs the target. */
  async pairing(intent: Exclude<PairingIntent, { kind: "text" }>): Promise<TurnOutcome> {
    try {
      const dir = this.directory();
      if (intent.kind === "link") {
        // A first contact's greeting already minted this conversation's code: /link repeats it.
        const minted = this.greetingCode ? null : await dir.mint(this.arrival(), this.nowMs);
        const code = minted ? minted.code : must(this.greetingCode, "the greeting's pairing code");
        const expires = minted ? minted.expires_at : must(this.greetingExpiresAt, "the greeting's code expiry");
        return answered(PAIRING_REPLIES.minted(code, isoUtc(expires)));
      }
      if (intent.kind === "unlink") {
        const r = await dir.unlink(this.arrival(), this.nowMs);
        return answered(r.ok ? PAIRING_REPLIES.unlinked : PAIRING_REPLIES.notLinked);
      }
      const r = await dir.redeem(this.arrival(), accountableParty(this.rec, this.guessKey), intent.code, this.nowMs);
      return answered(r.ok ? PAIRING_REPLIES.linked : PAIRING_REPLIES.invalid);
    } catch (err) {
      return errorOutcome(`pairing failed: ${err instanceof Error ? err.message : "unknown error"}`);
    }
  }

  /**
   * The first-contact greeting, rendered (minting the conversation's code when the template uses
   * `{pairing_code}`); null when there is none to send or the template no longer parses.
   */
  async greeting(template: string | null | undefined): Promise<string | null> {
    if (!template) return null;
    const parsed = parseGreetingTemplate(template);
    if (!parsed.ok) return null;
    if (needsPairingCode(parsed.parts)) {
      const minted = await this.directory().mint(this.arrival(), this.nowMs);
      this.greetingCode = minted.code;
      this.greetingExpiresAt = minted.expires_at;
    }
    return renderGreeting(parsed.parts, this.greetingCode);
  }
}

const answered = (text: string): TurnOutcome => ({ answer_status: "answered", answer: text, error: null });

/**
 * Prepends a greeting to a turn's outcome (decisions §12): `<greeting>\n\n<answer>`; a silent turn
 * answers the greeting alone; an error keeps the greeting first and stays an error.
 */
export function withGreeting(outcome: TurnOutcome, greeting: string | null): TurnOutcome {
  if (!greeting) return outcome;
  if (outcome.answer_status === "silent" || outcome.answer === null || outcome.answer === "")
    return { answer_status: "answered", answer: greeting, error: null };
  return { ...outcome, answer: `${greeting}\n\n${outcome.answer}` };
}
