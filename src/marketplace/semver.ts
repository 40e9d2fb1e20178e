/**
 * Semantic versions (SemVer 2.0.0) for plugin versions: parsing and precedence. Pure.
 *
 * Precedence is the spec's: major, minor and patch numerically; a prerelease ranks below its
 * release; prerelease identifiers compare numerically when both are numeric, else in ASCII order,
 * numeric below alphanumeric, and a shorter list below a longer one it prefixes. Build metadata
 * (`+…`) is ignored, so `1.0.0+a` and `1.0.0+b` are the same version (a registry may not list both).
 * Numbers may be longer than a double holds: they compare by length, then digit by digit.
 */

/** Longest version string accepted (the registry index and request bodies alike). */
export const MAX_VERSION_LENGTH = 128;

const NUMERIC = "0|[1-9]\\d*";
const PRE_ID = `(?:${NUMERIC}|\\d*[a-zA-Z-][0-9a-zA-Z-]*)`;
const SEMVER = new RegExp(`^(${NUMERIC})\\.(${NUMERIC})\\.(${NUMERIC})(?:-(${PRE_ID}(?:\\.${PRE_ID})*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$`);

export interface SemVer {
  major: string;
  minor: string;
  patch: string;
  /** Prerelease identifiers; empty for a release. */
  prerelease: string[];
}

/** The parsed version, or null when `text` is not a SemVer 2.0.0 version. */
export function parseSemver(text: string): SemVer | null {
  if (text.length > MAX_VERSION_LENGTH) return null;
  const m = SEMVER.exec(text);
  if (!m) return null;
  return { major: m[1], minor: m[2], patch: m[3], prerelease: m[4] ? m[4].split(".") : [] };
}

export function isSemver(text: string): boolean {
  return parseSemver(text) !== null;
}

function compareNumeric(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

const ALL_DIGITS = /^\d+$/;

function compareIdentifier(a: string, b: string): number {
  const an = ALL_DIGITS.test(a);
  const bn = ALL_DIGITS.test(b);
  if (an && bn) return compareNumeric(a, b);
  if (an) return -1;
  if (bn) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Precedence of two parsed versions: negative, zero or positive. */
export function compareParsed(a: SemVer, b: SemVer): number {
  for (const key of ["major", "minor", "patch"] as const) {
    const c = compareNumeric(a[key], b[key]);
    if (c) return c;
  }
  if (!a.prerelease.length || !b.prerelease.length) {
    // A release outranks any prerelease of the same numbers.
    return a.prerelease.length === b.prerelease.length ? 0 : a.prerelease.length ? -1 : 1;
  }
  const n = Math.min(a.prerelease.length, b.prerelease.length);
  for (let i = 0; i < n; i += 1) {
    const c = compareIdentifier(a.prerelease[i], b.prerelease[i]);
    if (c) return c;
  }
  return a.prerelease.length - b.prerelease.length;
}

/** Precedence of two version strings; throws on a string that is not a version (callers validated it). */
export function compareVersions(a: string, b: string): number {
  const pa = parseSemver(a);
  const pb = parseSemver(b);
  if (!pa || !pb) throw new Error("compareVersions: not a semantic version");
  return compareParsed(pa, pb);
}

export function isPrerelease(version: string): boolean {
  return (parseSemver(version)?.prerelease.length ?? 0) > 0;
}
