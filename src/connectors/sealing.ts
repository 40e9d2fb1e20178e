/**
 * Secrets at rest (docs/connectors.md "Tokens at rest"): AES-256-GCM on WebCrypto, a fresh random
 * 96-bit IV per seal, and the id of the key that sealed it stored beside the ciphertext, so a
 * rotation can open old ciphertexts with a previous key and re-seal them under the current one.
 *
 * The additional authenticated data binds a ciphertext to what it belongs to (a connection id, a
 * started authorization's state hash): a ciphertext copied to another row does not open.
 */
import { z } from "zod";
import { toHex } from "../access-control/crypto";
import type { KeyMaterial, KeyRing } from "./rpc";

/** A sealed secret: key id, IV and ciphertext (with its GCM tag), both base64. */
export const Sealed = z.object({ kid: z.string(), iv: z.string(), ct: z.string() });
export type Sealed = z.infer<typeof Sealed>;

const enc = new TextEncoder();
const dec = new TextDecoder();

function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function fromBase64(text: string): Uint8Array {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Imported keys by their base64 text (a handful per isolate: the current and previous keys). */
const imported = new Map<string, Promise<CryptoKey>>();

function cryptoKey(m: KeyMaterial): Promise<CryptoKey> {
  let k = imported.get(m.key);
  if (!k) {
    k = crypto.subtle.importKey("raw", fromBase64(m.key), { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
    if (imported.size > 32) imported.clear();
    imported.set(m.key, k);
  }
  return k;
}

/**
 * A key's id: the first 16 hex digits of SHA-256 over a domain label and the key. Derived, so an
 * operator names no ids; one-way, so it says nothing usable about the key.
 */
export async function keyId(base64Key: string): Promise<string> {
  const raw = fromBase64(base64Key);
  const label = enc.encode("conversation-bridge connector key id\0");
  const data = new Uint8Array(label.length + raw.length);
  data.set(label);
  data.set(raw, label.length);
  return toHex(await crypto.subtle.digest("SHA-256", data)).slice(0, 16);
}

/** The ring for the settings' keys (`current` must be set: callers are behind the store gate, whose settings require it). */
export async function keyRingOf(keys: { current: string | null; previous: string[] }): Promise<KeyRing> {
  if (!keys.current) throw new Error("the connector encryption key is not set");
  const current = { id: await keyId(keys.current), key: keys.current };
  const previous = await Promise.all(keys.previous.map(async (key) => ({ id: await keyId(key), key })));
  return { current, previous };
}

/** Seals `plaintext` under the ring's current key. */
export async function seal(ring: KeyRing, plaintext: string, aad: string): Promise<Sealed> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: enc.encode(aad) }, await cryptoKey(ring.current), enc.encode(plaintext));
  return { kid: ring.current.id, iv: toBase64(iv), ct: toBase64(new Uint8Array(ct)) };
}

/** Opens a sealed secret with the key its id names; null when no key of the ring has that id or the ciphertext does not authenticate. */
export async function unseal(ring: KeyRing, sealed: Sealed, aad: string): Promise<string | null> {
  const m = [ring.current, ...ring.previous].find((k) => k.id === sealed.kid);
  if (!m) return null;
  try {
    const pt = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64(sealed.iv), additionalData: enc.encode(aad) },
      await cryptoKey(m),
      fromBase64(sealed.ct),
    );
    return dec.decode(pt);
  } catch {
    return null;
  }
}

/** A stored sealed value (JSON text), or null when it is not one. */
export function parseSealed(text: string): Sealed | null {
  try {
    const v = Sealed.safeParse(JSON.parse(text));
    return v.success ? v.data : null;
  } catch {
    return null;
  }
}
