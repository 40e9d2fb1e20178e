// The local development secrets: the git-ignored `.dev.vars` next to wrangler.toml, which
// `npm start` fills on first run with random values for the secrets wrangler.toml declares
// (`[secrets] required`), and reads back for the optional local settings it passes to wrangler dev.
// Plain Node (no TypeScript): `npm start` runs it before anything is built. docs/deploy.md.
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The secrets a deployment must have, in wrangler.toml's order (a test keeps the two lists equal).
 * `sealing-key`: 32 random bytes in base64 (AES-256-GCM). `token`: a long random string.
 * @type {ReadonlyArray<{ name: string, kind: "sealing-key" | "token" }>}
 */
export const REQUIRED_SECRETS = [
  { name: "ACCESS_CONTROL_BOOTSTRAP_TOKEN", kind: "token" },
  { name: "SETTINGS_ENCRYPTION_KEY", kind: "sealing-key" },
  { name: "CONNECTORS_ENCRYPTION_KEY", kind: "sealing-key" },
];

/**
 * A fresh random value of that kind: 32 bytes in base64 for a sealing key, 32 bytes in base64url
 * (43 characters, safe unquoted in a shell, JSON or .dev.vars) for a token.
 * @param {"sealing-key" | "token"} kind
 */
export function generateSecret(kind) {
  return randomBytes(32).toString(kind === "token" ? "base64url" : "base64");
}

/**
 * Parses `.dev.vars` (dotenv lines, as wrangler reads them): `NAME=value`, an optional `export `,
 * values in single quotes (literal), double quotes (`\n` escapes, may span lines) or bare (a ` #`
 * starts a comment), `#` comment lines. Later lines win.
 * @param {string} text
 * @returns {Record<string, string>}
 */
export function parseDevVars(text) {
  /** @type {Record<string, string>} */
  const out = {};
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/);
    if (!m) continue;
    const name = m[1];
    let rest = m[2];
    const quote = rest[0];
    if (quote === '"' || quote === "'" || quote === "`") {
      let body = rest.slice(1);
      // A quoted value may continue on the next lines until its closing quote.
      while (body.indexOf(quote) < 0 && i + 1 < lines.length) body += `\n${lines[++i]}`;
      const end = body.indexOf(quote);
      rest = end < 0 ? body : body.slice(0, end);
      if (quote === '"') rest = rest.replace(/\\n/g, "\n").replace(/\\r/g, "\r");
      out[name] = rest;
    } else {
      out[name] = rest.replace(/\s+#.*$/, "").trim();
    }
  }
  return out;
}

/**
 * Reads and parses a `.dev.vars`; an empty record when there is none.
 * @param {string} path
 * @returns {Record<string, string>}
 */
export function readDevVars(path) {
  return existsSync(path) ? parseDevVars(readFileSync(path, "utf8")) : {};
}

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Makes sure `<dir>/.dev.vars` holds every required secret, adding only the missing ones with fresh
 * random values and never changing a line already there. Several processes may call it at once
 * (the e2e suites start several servers): a lock file serializes them, the file is re-read under
 * the lock, and the new content replaces the old in one rename, so a reader never sees half a file.
 * @param {string} dir the directory of wrangler.toml
 * @returns {Promise<{ path: string, created: boolean, added: string[] }>}
 */
export async function ensureDevVars(dir) {
  const path = join(dir, ".dev.vars");
  const missing = () => REQUIRED_SECRETS.filter((s) => !readDevVars(path)[s.name]);
  if (missing().length === 0) return { path, created: false, added: [] };

  const lock = `${path}.lock`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      closeSync(openSync(lock, "wx"));
      break;
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code !== "EEXIST") throw err;
      // A lock older than 10 s belongs to a process that died holding it.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 10_000) rmSync(lock, { force: true });
      } catch {
        /* released meanwhile */
      }
      if (Date.now() > deadline) throw new Error(`could not lock ${lock}; remove it if no other npm start is running`);
      await sleep(50);
    }
  }
  try {
    const created = !existsSync(path);
    const toAdd = missing();
    if (toAdd.length === 0) return { path, created: false, added: [] };
    const before = created ? "" : readFileSync(path, "utf8");
    const head = created
      ? "# Local development secrets, written by `npm start` (scripts/dev-vars.mjs). Git-ignored; never\n" +
        "# deploy these values (the deploy's preflight refuses them). Optional local settings may follow.\n"
      : before.length && !before.endsWith("\n")
        ? "\n"
        : "";
    const added = toAdd.map((s) => `${s.name}=${generateSecret(s.kind)}\n`).join("");
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, before + head + added, { mode: 0o600 });
    renameSync(tmp, path);
    return { path, created, added: toAdd.map((s) => s.name) };
  } finally {
    rmSync(lock, { force: true });
  }
}
