/**
 * What a web visitor's upload is (src/web-chat/attachments.ts), pure: the type comes from the
 * bytes, a claim or a name that says otherwise is refused, and the name served is a clean one.
 */
import { describe, expect, it } from "vitest";
import { ATTACHMENT_TYPES, DEFAULT_ATTACHMENT_POLICY, checkUpload, disposition, sniff } from "../../src/web-chat/attachments";

const bytes = (...b: number[]) => new Uint8Array(b);
const text = (s: string) => new TextEncoder().encode(s);
const ALL = { ...DEFAULT_ATTACHMENT_POLICY, allowed_types: [...ATTACHMENT_TYPES] };

describe("sniff", () => {
  it("knows each type by its signature, and text by being clean UTF-8", () => {
    expect(sniff(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0))).toBe("image/png");
    expect(sniff(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe("image/jpeg");
    expect(sniff(text("GIF89a...."))).toBe("image/gif");
    expect(sniff(text("GIF87a...."))).toBe("image/gif");
    expect(sniff(text("RIFF\u0001\u0002\u0003\u0004WEBPVP8 "))).toBe("image/webp");
    expect(sniff(text("%PDF-1.7\n"))).toBe("application/pdf");
    expect(sniff(text("a line\r\n\tand another, café\n"))).toBe("text/plain");
  });

  it("knows nothing else: binary, control bytes, invalid UTF-8, an empty file, a RIFF that is not WebP", () => {
    expect(sniff(bytes(0, 1, 2, 3))).toBeNull();
    expect(sniff(text("bell\u0007"))).toBeNull();
    expect(sniff(bytes(0xc3, 0x28))).toBeNull();
    expect(sniff(bytes())).toBeNull();
    expect(sniff(text("RIFF\u0001\u0002\u0003\u0004WAVEfmt "))).toBeNull();
  });
});

describe("checkUpload", () => {
  it("takes a claim or an extension that agrees, and names a file that has none", () => {
    const jpeg = bytes(0xff, 0xd8, 0xff, 0xe0);
    expect(checkUpload(ALL, jpeg, "image/jpg", "Photo.JPG")).toEqual({
      ok: true,
      type: "image/jpeg",
      kind: "image",
      filename: "Photo.JPG",
      contentType: "image/jpeg",
    });
    expect(checkUpload(ALL, jpeg, "application/octet-stream", "photo")).toMatchObject({ ok: true, filename: "photo.jpg" });
    expect(checkUpload(ALL, text("a,b\n1,2\n"), "text/csv; charset=utf-8", "sheet.csv")).toMatchObject({
      ok: true,
      kind: "document",
      contentType: "text/plain; charset=utf-8",
    });
  });

  it("refuses a disguise by claim or by name, and keeps only the last path segment of a name", () => {
    const png = bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);
    expect(checkUpload(ALL, png, "image/svg+xml", null)).toMatchObject({ ok: false, status: 415, code: "disguised_type" });
    expect(checkUpload(ALL, png, null, "x.svg")).toMatchObject({ ok: false, code: "disguised_type" });
    expect(checkUpload(ALL, text("<svg onload=alert(1)>"), "image/svg+xml", "x.svg")).toMatchObject({ ok: false, code: "disguised_type" });
    expect(checkUpload(ALL, png, null, "../../etc/\u0000pic\u0007.png")).toMatchObject({ ok: true, filename: "pic.png" });
    expect(checkUpload(ALL, png, null, "   ")).toMatchObject({ ok: true, filename: "attachment.png" });
  });

  it("refuses over the cap first, naming it", () => {
    expect(checkUpload({ ...ALL, max_bytes: 3 }, bytes(0xff, 0xd8, 0xff, 0xe0), null, null)).toEqual({
      ok: false,
      status: 413,
      code: "attachment_too_large",
      error: "an upload is limited to 3 bytes on this chat",
    });
  });
});

describe("disposition", () => {
  it("gives an ASCII fallback and the UTF-8 name, with nothing that could end the header value", () => {
    expect(disposition("attachment", 'résumé "final" 100%.pdf')).toBe(
      `attachment; filename="r_sum_ _final_ 100_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22%20100%25.pdf`,
    );
    expect(disposition("inline", "it's (1).png")).toBe(`inline; filename="it's (1).png"; filename*=UTF-8''it%27s%20%281%29.png`);
  });
});
