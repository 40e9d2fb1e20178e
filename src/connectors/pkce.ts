/**
 * The random parts of an authorization (RFC 6749 §10.12 `state`, RFC 7636 PKCE): a state of 32
 * CSPRNG bytes, stored only as its SHA-256; a code verifier of 32 CSPRNG bytes (43 characters, the
 * RFC's minimum length and full entropy), kept server-side; its S256 challenge goes in the URL.
 */
import { base64url, randomToken, sha256Hex } from "../access-control/crypto";

/** A fresh `state` (43 url-safe characters). */
export const newState = randomToken;

/** A fresh code verifier (43 url-safe characters, RFC 7636 §4.1). */
export const newCodeVerifier = randomToken;

/** `BASE64URL(SHA256(ASCII(code_verifier)))` (RFC 7636 §4.2, method S256). */
export async function codeChallengeS256(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

/** What is stored of a state: its SHA-256 (hex). */
export const stateHash = sha256Hex;
