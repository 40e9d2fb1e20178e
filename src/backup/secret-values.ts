/**
 * Secret values in a backup document (docs/backup.md "Where the secrets are"). Only an admin may
 * export, and admins never obtain a secret, so no export carries one in the clear: each value of a
 * secret section is sealed (AES-256-GCM, src/connectors/sealing.ts) under the exporting
 * deployment's `SETTINGS_ENCRYPTION_KEY`, which is env only and never shown. Its additional
 * authenticated data names the one place it may be restored to: the section, the row's natural
 * key and, for a literal header, the origin of the URL the value is sent to. So a sealed value
 * opens only in a deployment holding that key (as its current or a previous key), and only into
 * the place it came from: an import cannot move it to another setting, topic, route, header or host.
 *
 * An import also takes a plain string where a sealed value may stand: a value typed in by whoever
 * imports, as the declaration doors take it.
 */
import { baseEnvOf, envConfig } from "../config/isolate-settings";
import { encryptionNotConfigured, settingsKeyRing } from "../config/secrets";
import { type Sealed, seal, unseal } from "../connectors/sealing";
import type { KeyRing } from "../connectors/rpc";
import type { SealedSecret, SecretValue, SectionName } from "./rows";
import { type ExportContext, rowFault } from "./section";

/** The place a sealed value belongs to: its AAD. Parts are joined with NUL, which no part holds. */
export function backupAad(section: SectionName, ...place: string[]): string {
  return ["backup", section, ...place].join("\0");
}

/** Seals for export; one ring per export (the caller keeps it). */
export class BackupSealer {
  private ring: Promise<KeyRing | null> | null = null;

  constructor(private readonly ctx: Pick<ExportContext, "env">) {}

  /** `value` sealed for `aad`; 501 settings-encryption-not-configured without a settings key. */
  async seal(value: string, aad: string): Promise<SealedSecret> {
    this.ring ??= settingsKeyRing(envConfig(baseEnvOf(this.ctx.env)));
    const ring = await this.ring;
    if (!ring) throw encryptionNotConfigured();
    return { sealed: await seal(ring, value, aad) };
  }
}

/**
 * The plain value of a document's secret at row `index`, field `field` of `section`: a plain string
 * as given; a sealed one opened with this deployment's settings keys under `aad`, or a 400 naming
 * the row and field when it does not open (another deployment's key, or sealed for another place).
 */
export async function openBackupSecret(
  ctx: Pick<ExportContext, "env">,
  section: SectionName,
  index: number,
  field: string,
  value: SecretValue,
  aad: string,
): Promise<string> {
  if (typeof value === "string") return value;
  const ring = await settingsKeyRing(envConfig(baseEnvOf(ctx.env)));
  const plain = ring ? await unseal(ring, value.sealed as Sealed, aad) : null;
  if (plain === null) {
    throw rowFault(
      section,
      index,
      field,
      "the sealed value does not open here: it was sealed under a SETTINGS_ENCRYPTION_KEY this deployment does not hold (current or previous), or for another place (setting, topic, route, header or URL origin); enter the value in plain text, or import where that key is held",
    );
  }
  return plain;
}
