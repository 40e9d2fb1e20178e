/**
 * Capability tokens: a kind's prefix plus 32 random bytes as base64url (43 characters), kept at
 * rest as their SHA-256 only. One definition for every such token (console live tickets, callback
 * tickets, hook trigger links), so their shape, minting and stored form cannot drift apart.
 */
import { randomToken, sha256Hex } from "./crypto";

export interface CapabilityTokenKind {
  readonly prefix: string;
  /** A fresh token of this kind. */
  mint(): string;
  /** Is `s` shaped like a token of this kind? A misshapen one is refused like an unknown one. */
  isShaped(s: string): boolean;
  /** The stored form of a token. */
  hash(token: string): Promise<string>;
}

/** The token kind with `prefix` (letters, digits and `-` only, so it is safe inside a pattern). */
export function capabilityTokenKind(prefix: string): CapabilityTokenKind {
  if (!/^[a-z0-9-]+$/.test(prefix)) throw new Error("capability token prefix must be lowercase letters, digits or -");
  const shape = new RegExp(`^${prefix}[A-Za-z0-9_-]{43}$`);
  return {
    prefix,
    mint: () => prefix + randomToken(),
    isShaped: (s) => shape.test(s),
    hash: (token) => sha256Hex(token),
  };
}
