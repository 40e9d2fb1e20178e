/**
 * The content store's pure rules (docs/storage.md): the path validator, byte ranges,
 * content types and the upload body's decoding.
 */
import { describe, expect, it } from "vitest";
import { ContentType, contentDisposition, inferContentType, isInlineSafe, isTextual } from "../../src/storage/content-types";
import { StorageDir, StoragePrefix, isWithin, storagePathProblem, storagePrefixProblem, touchesAdminOnlyDir } from "../../src/storage/paths";
import { contentRange, decideRange } from "../../src/storage/range";
import { UploadBody, decodeBase64, prepareUpload } from "../../src/storage/upload";
import { must } from "../../src/platform/must";

describe("storage paths", () => {
  it("accepts relative /-separated paths of non-empty segments, unicode and spaces included", () => {
    for (const ok of ["a", "a/b/c.txt", "templates/greet.mustache", "héllo wörld/ü.md", "a..b/c", ".hidden/x", "x".repeat(255), "日本/語.txt"]) {
      expect(storagePathProblem(ok), ok).toBeNull();
    }
  });

  it.each([
    ["", "must not be empty"],
    ["/abs", "relative"],
    ["dir/", "must not end with /"],
    ["a//b", "empty segment"],
    ["../etc/passwd", ". or .. segments"],
    ["a/../b", ". or .. segments"],
    ["a/./b", ". or .. segments"],
    [".", ". or .. segments"],
    ["a\\b", "backslash"],
    ["a\u0000b", "control characters"],
    ["a\nb", "control characters"],
    ["a\u007Fb", "control characters"],
    ["a\u0085b", "control characters"],
    ["a\uD800b", "lone UTF-16 surrogates"],
    ["x".repeat(256), "at most 255 characters"],
    [Array(33).fill("a").join("/"), "at most 32 segments"],
    [Array(5).fill("é".repeat(120)).join("/"), "at most 1024 bytes"],
  ])("refuses %j (%s)", (path, rule) => {
    expect(storagePathProblem(path)).toContain(rule);
  });

  it("prefixes: empty, a path, or a directory ending with /", () => {
    expect(storagePrefixProblem("")).toBeNull();
    expect(storagePrefixProblem("templates/")).toBeNull();
    expect(storagePrefixProblem("templates/gre")).toBeNull();
    expect(storagePrefixProblem("/")).not.toBeNull();
    expect(storagePrefixProblem("a//")).not.toBeNull();
    expect(storagePrefixProblem("../")).not.toBeNull();
    expect(StoragePrefix.safeParse("a/b/").success).toBe(true);
  });

  it("directories drop one trailing slash; the schema message never echoes the value", () => {
    expect(StorageDir.parse("docs/")).toBe("docs");
    expect(StorageDir.parse("docs")).toBe("docs");
    const bad = StorageDir.safeParse("../SECRETPATH");
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error)).not.toContain("SECRETPATH");
  });

  it("the plugins directory is the admin-only one", () => {
    expect(touchesAdminOnlyDir("plugins")).toBe(true);
    expect(touchesAdminOnlyDir("plugins/x/studio/index.html")).toBe(true);
    expect(touchesAdminOnlyDir("pluginsx/a")).toBe(false);
    expect(touchesAdminOnlyDir("a/plugins/b")).toBe(false);
    expect(isWithin("a/b", "a")).toBe(true);
    expect(isWithin("ab", "a")).toBe(false);
  });
});

describe("byte ranges", () => {
  it("a-b, a- and -n within the object", () => {
    expect(decideRange("bytes=0-4", 10)).toEqual({ kind: "partial", offset: 0, length: 5 });
    expect(decideRange("bytes=5-100", 10)).toEqual({ kind: "partial", offset: 5, length: 5 });
    expect(decideRange("bytes=7-", 10)).toEqual({ kind: "partial", offset: 7, length: 3 });
    expect(decideRange("bytes=-3", 10)).toEqual({ kind: "partial", offset: 7, length: 3 });
    expect(decideRange("bytes=-30", 10)).toEqual({ kind: "partial", offset: 0, length: 10 });
    expect(decideRange("BYTES = 2 - 2", 10)).toEqual({ kind: "partial", offset: 2, length: 1 });
  });

  it("unsatisfiable: a start past the end, a zero suffix, any range of an empty object", () => {
    expect(decideRange("bytes=10-", 10)).toEqual({ kind: "unsatisfiable" });
    expect(decideRange("bytes=10-20", 10)).toEqual({ kind: "unsatisfiable" });
    expect(decideRange("bytes=-0", 10)).toEqual({ kind: "unsatisfiable" });
    expect(decideRange("bytes=0-0", 0)).toEqual({ kind: "unsatisfiable" });
    expect(decideRange("bytes=-5", 0)).toEqual({ kind: "unsatisfiable" });
  });

  it("ignored (the whole object): absent, several ranges, other units, a > b, garbage", () => {
    for (const h of [null, "", "bytes=0-1,3-4", "items=0-1", "bytes=5-2", "bytes=-", "bytes=a-b", "bytes 0-1"]) {
      expect(decideRange(h, 10), String(h)).toEqual({ kind: "whole" });
    }
  });

  it("Content-Range names the inclusive end", () => {
    expect(contentRange(7, 3, 10)).toBe("bytes 7-9/10");
  });
});

describe("content types", () => {
  it("infers from the extension, else text or bytes by encoding", () => {
    expect(inferContentType("a/b.JSON", "text")).toBe("application/json");
    expect(inferContentType("t.mustache", "text")).toBe("text/x-mustache; charset=utf-8");
    expect(inferContentType("img.png", "base64")).toBe("image/png");
    expect(inferContentType("notes", "text")).toBe("text/plain; charset=utf-8");
    expect(inferContentType("blob.bin", "base64")).toBe("application/octet-stream");
    expect(inferContentType(".profile", "text")).toBe("text/plain; charset=utf-8");
  });

  it("validates a given type as a media type", () => {
    for (const ok of ["text/plain", "application/vnd.api+json", 'text/plain; charset="utf-8"', "image/png;q=1"])
      expect(ContentType.safeParse(ok).success, ok).toBe(true);
    for (const bad of ["text", "text/plain\r\nx-evil: 1", "/plain", "text/", "a b/c", "text/plain; charset"])
      expect(ContentType.safeParse(bad).success, bad).toBe(false);
  });

  it("inline only for types that run nothing; HTML, SVG and scripts download", () => {
    for (const t of ["text/plain; charset=utf-8", "IMAGE/PNG", "application/json", "application/pdf", "video/mp4"]) expect(isInlineSafe(t), t).toBe(true);
    for (const t of ["text/html", "image/svg+xml", "text/javascript", "application/xml", "application/octet-stream", "text/x-mustache"])
      expect(isInlineSafe(t), t).toBe(false);
    expect(isTextual("text/x-mustache; charset=utf-8")).toBe(true);
    expect(isTextual("application/ld+json")).toBe(true);
    expect(isTextual("image/png")).toBe(false);
  });

  it("content-disposition carries an ASCII name and the exact one", () => {
    expect(contentDisposition("docs/report 1.pdf", true)).toBe(`inline; filename="report_1.pdf"; filename*=UTF-8''report%201.pdf`);
    expect(contentDisposition('ü/"x".html', false)).toBe(`attachment; filename="_x_.html"; filename*=UTF-8''%22x%22.html`);
  });
});

describe("the upload body", () => {
  it("decodes standard base64 with or without padding; refuses anything else", () => {
    expect([...must(decodeBase64("aGk="), 'decodeBase64("aGk=")')]).toEqual([104, 105]);
    expect([...must(decodeBase64("aGk"), 'decodeBase64("aGk")')]).toEqual([104, 105]);
    expect([...must(decodeBase64(""), 'decodeBase64("")')]).toEqual([]);
    for (const bad of ["a", "aGk==", "aG k=", "aGk_", "@@@@", "aGk=aGk="]) expect(decodeBase64(bad), bad).toBeNull();
  });

  it("measures the decoded size against the cap (413) and infers the type", () => {
    const body = UploadBody.parse({ id: "a/b.txt", content: "héllo" });
    expect(prepareUpload(body, 6, () => "x")).toMatchObject({ id: "a/b.txt", contentType: "text/plain; charset=utf-8" });
    expect(() => prepareUpload(body, 5, () => "x")).toThrow(expect.objectContaining({ status: 413 }));
    const bin = UploadBody.parse({ content: "AAEC", encoding: "base64" });
    expect(prepareUpload(bin, 3, () => "new-id")).toMatchObject({ id: "new-id", contentType: "application/octet-stream", bytes: new Uint8Array([0, 1, 2]) });
    expect(() => prepareUpload(UploadBody.parse({ content: "%%%", encoding: "base64" }), 10, () => "x")).toThrow(expect.objectContaining({ status: 400 }));
  });
});
