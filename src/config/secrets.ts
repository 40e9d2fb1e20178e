/**
 * Secret settings at rest: AES-256-GCM under `SETTINGS_ENCRYPTION_KEY` (WebCrypto), through the
 * connectors area's sealing (src/connectors/sealing.ts: a fresh IV per seal, the sealing key's id
 * stored beside the ciphertext so a rotated-out key still opens it).
 *
 * The additional authenticated data names where a ciphertext belongs (the overlay's row of a name,
 * or a profile's entry), so a sealed value copied to another name or profile does not open.
 */
import { z } from "zod";
import { Sealed, keyRingOf, parseSealed, seal, unseal } from "../connectors/sealing";
import type { KeyRing } from "../connectors/rpc";
import { notConfigured } from "../platform/http/errors";
import type { ConfigSettings } from "../platform/settings/config-settings";

export type { Sealed };

/** A profile version's `sealed` column: setting name → its sealed value. */
export const SealedEntries = z.record(z.string(), Sealed);

/** Seals `plaintext` as a value to keep inside a JSON document (a profile's `sealed` column). */
export async function sealEntry(ring: KeyRing, plaintext: string, aad: string): Promise<Sealed> {
  return seal(ring, plaintext, aad);
}

/** Where a sealed value lives: its AAD. */
export const overlayAad = (name: string) => `settings-overlay\0${name}`;
export const profileAad = (profile: string, name: string) => `settings-profile\0${profile}\0${name}`;

/** The 501 a secret write answers without `SETTINGS_ENCRYPTION_KEY`. */
export const encryptionNotConfigured = () =>
  notConfigured("settings-encryption", "settings encryption not configured (set SETTINGS_ENCRYPTION_KEY to write secret settings)");

/** The ring of the settings keys, or null when no key is set (nothing secret can be sealed). */
export async function settingsKeyRing(config: ConfigSettings): Promise<KeyRing | null> {
  return config.keys.current ? keyRingOf(config.keys) : null;
}

/** The ring for a write that seals: 501 without a key. */
export async function sealingRing(config: ConfigSettings): Promise<KeyRing> {
  const ring = await settingsKeyRing(config);
  if (!ring) throw encryptionNotConfigured();
  return ring;
}

export async function sealText(ring: KeyRing, plaintext: string, aad: string): Promise<string> {
  return JSON.stringify(await seal(ring, plaintext, aad));
}

/** Opens a stored sealed value; null when it is malformed, sealed by an unknown key, or tampered with. */
export async function openText(ring: KeyRing | null, stored: string, aad: string): Promise<string | null> {
  if (!ring) return null;
  const sealed = parseSealed(stored);
  return sealed ? unseal(ring, sealed, aad) : null;
}

/** True when `stored` was sealed by a key other than the ring's current one (a rotation left it behind). */
export function sealedByOlderKey(ring: KeyRing, stored: string): boolean {
  const sealed = parseSealed(stored);
  return sealed !== null && sealed.kid !== ring.current.id;
}
