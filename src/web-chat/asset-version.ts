/**
 * A built file's version as the widget names it (`assets/chat.css?v=`): the first 16 hex digits of
 * the SHA-384 that the file's SRI value in the build's manifest carries. scripts/build-console.mjs
 * computes the same from the file's bytes when it bakes the version into widget.js, so the asset
 * door can tell the current version from any other without reading the file.
 */
export function webAssetVersion(integrity: string): string {
  try {
    const digest = atob(integrity.replace(/^sha384-/, ""));
    return [...digest.slice(0, 8)].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
  } catch {
    return "";
  }
}
