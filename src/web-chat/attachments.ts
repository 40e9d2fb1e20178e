/**
 * What a web visitor may upload (docs/channels.md, "Attachments"): an identity's policy (kept on
 * its site row, migration 0032), and the check an upload passes before anything is stored: its
 * type is what its bytes are (their signature), never what the upload claims, and a claim or a
 * file name that says otherwise is refused as disguised.
 */
import { z } from "zod";

/** The types an upload can be: each one recognised by its bytes. SVG and HTML never are. */
export const ATTACHMENT_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain"] as const;
export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

/** The largest upload any identity may allow. */
export const MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024;

/** An identity's upload policy. */
export const AttachmentPolicy = z
  .object({
    enabled: z.boolean(),
    max_bytes: z.number().int().min(1).max(MAX_ATTACHMENT_BYTES),
    allowed_types: z.array(z.enum(ATTACHMENT_TYPES)),
  })
  .strict()
  .describe("WebAttachmentPolicy");
export type AttachmentPolicy = z.infer<typeof AttachmentPolicy>;

/** An identity never configured: images and PDF up to 5 MiB. */
export const DEFAULT_ATTACHMENT_POLICY: AttachmentPolicy = {
  enabled: true,
  max_bytes: 5 * 1024 * 1024,
  allowed_types: ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"],
};

/** `PUT /api/channels/web/sites/{identity}/attachments`: the fields given replace the policy's. */
export const AttachmentPolicyBody = z
  .object({
    enabled: z.boolean().optional(),
    max_bytes: AttachmentPolicy.shape.max_bytes.optional(),
    allowed_types: AttachmentPolicy.shape.allowed_types
      .max(ATTACHMENT_TYPES.length * 2)
      .transform((types) => [...new Set(types)])
      .optional(),
  })
  .strict();
export type AttachmentPolicyBody = z.infer<typeof AttachmentPolicyBody>;

export const AttachmentPolicyView = z
  .object({ identity: z.string(), enabled: z.boolean(), max_bytes: z.number(), allowed_types: z.array(z.string()) })
  .strict()
  .describe("WebAttachmentPolicyView");

/** The policy stored in the site row's `attachments` column (null: the defaults). */
export function parsePolicy(stored: string | null): AttachmentPolicy {
  if (stored === null) return DEFAULT_ATTACHMENT_POLICY;
  let value: unknown;
  try {
    value = JSON.parse(stored);
  } catch {
    value = null;
  }
  // Only this module writes the column; a value it cannot read is a fault, named without its content.
  const parsed = AttachmentPolicy.safeParse(value);
  if (!parsed.success) throw new Error("web_sites row: attachments is not a stored attachment policy");
  return parsed.data;
}

/** Per type: its leading bytes (null: a byte that may be anything), the file name extensions it may carry, and the types a browser may claim for it. */
const SIGNATURES: ReadonlyArray<{ type: AttachmentType; magic: Array<number | null>; ext: string[]; claims: string[] }> = [
  { type: "image/png", magic: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], ext: ["png"], claims: ["image/png"] },
  { type: "image/jpeg", magic: [0xff, 0xd8, 0xff], ext: ["jpg", "jpeg", "jpe", "jfif"], claims: ["image/jpeg", "image/jpg", "image/pjpeg"] },
  { type: "image/gif", magic: [0x47, 0x49, 0x46, 0x38, null, 0x61], ext: ["gif"], claims: ["image/gif"] },
  {
    type: "image/webp",
    magic: [0x52, 0x49, 0x46, 0x46, null, null, null, null, 0x57, 0x45, 0x42, 0x50],
    ext: ["webp"],
    claims: ["image/webp"],
  },
  { type: "application/pdf", magic: [0x25, 0x50, 0x44, 0x46, 0x2d], ext: ["pdf"], claims: ["application/pdf"] },
];
const TEXT = { ext: ["txt", "text", "log", "csv", "md"], claims: ["text/plain", "text/csv", "text/markdown"] };

/** What the bytes are: a signature's type, text/plain for UTF-8 text without control bytes, else null. */
export function sniff(bytes: Uint8Array): AttachmentType | null {
  for (const s of SIGNATURES) if (bytes.length >= s.magic.length && s.magic.every((b, i) => b === null || bytes[i] === b)) return s.type;
  try {
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
    // Tab, line feed, form feed and carriage return are text; every other control byte is not.
    return bytes.length > 0 && !/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text) ? "text/plain" : null;
  } catch {
    return null;
  }
}

/** Why an upload is refused, or what it is. */
export type Checked =
  | { ok: true; type: AttachmentType; kind: "image" | "document"; filename: string; contentType: string }
  | { ok: false; status: 413 | 415; code: string; error: string };

/** The name a file is shown and served under: its last path segment, no control characters, at most 200 characters. */
function cleanName(name: string): string {
  const last = name.split(/[/\\]/).pop() ?? "";
  return [...last.replace(/[\u0000-\u001f\u007f"]/g, "").trim()].slice(0, 200).join("");
}

/**
 * Checks an upload against `policy`: its size, its bytes' type (which must be allowed), and that
 * neither the type it claims (`claimed`, its Content-Type; absent or octet-stream claims nothing)
 * nor its file name's extension says it is something else. Answers the type and the name to keep.
 */
export function checkUpload(policy: AttachmentPolicy, bytes: Uint8Array, claimed: string | null, name: string | null): Checked {
  if (bytes.byteLength > policy.max_bytes)
    return { ok: false, status: 413, code: "attachment_too_large", error: `an upload is limited to ${policy.max_bytes} bytes on this chat` };
  const type = sniff(bytes);
  const allowed = policy.allowed_types.join(", ") || "none";
  if (!type) return { ok: false, status: 415, code: "unsupported_type", error: `this file's content is not a type this chat accepts (${allowed})` };
  const rules = SIGNATURES.find((s) => s.type === type) ?? TEXT;
  const claim = (claimed ?? "").split(";")[0].trim().toLowerCase();
  const filename = cleanName(name ?? "") || "attachment";
  const dot = filename.lastIndexOf(".");
  const ext = dot > 0 ? filename.slice(dot + 1).toLowerCase() : "";
  const disguised = (claim !== "" && claim !== "application/octet-stream" && !rules.claims.includes(claim)) || (ext !== "" && !rules.ext.includes(ext));
  if (disguised) return { ok: false, status: 415, code: "disguised_type", error: "this file's content is not the type its name or Content-Type claims" };
  if (!policy.allowed_types.includes(type)) return { ok: false, status: 415, code: "type_not_allowed", error: `this chat accepts only ${allowed}` };
  return {
    ok: true,
    type,
    kind: type.startsWith("image/") ? "image" : "document",
    filename: ext ? filename : `${filename}.${rules.ext[0]}`,
    contentType: type === "text/plain" ? "text/plain; charset=utf-8" : type,
  };
}

/** A Content-Disposition for `filename`: an ASCII fallback and the UTF-8 name (RFC 6266). */
export function disposition(kind: "inline" | "attachment", filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
