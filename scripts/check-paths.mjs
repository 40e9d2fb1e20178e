// Every path a comment or a doc names must exist: a moved module leaves no pointer behind.
// Scans the tracked sources and docs for repository paths (src/…, test/…, docs/…) and fails
// naming each one that is gone. Globs and placeholders (`*`, `<area>`, `{…}`) are checked up to
// the first such segment.
import { execSync } from "node:child_process";
import fs from "node:fs";

const ROOTS = ["src", "test", "docs", "scripts", "durable-objects", "console", "webchat", "migrations", "public"];
const files = execSync("git ls-files -- src test docs scripts durable-objects console webchat README.md .dependency-cruiser.cjs vitest.config.ts", {
  encoding: "utf8",
})
  .split("\n")
  .filter((f) => /\.(ts|tsx|mjs|cjs|js|md)$/.test(f));
const tracked = execSync("git ls-files", { encoding: "utf8" }).split("\n");
const mention = new RegExp(`(?<![\\w./@-])(?:\\./)?((?:${ROOTS.join("|")})/[A-Za-z0-9_./*<>{}-]*[A-Za-z0-9_*>}/-])`, "g");

function exists(p, from) {
  const cut = p.split("/");
  const kept = [];
  for (const seg of cut) {
    if (/[*<>{}]/.test(seg)) break;
    kept.push(seg);
  }
  const path = kept.join("/").replace(/\/$/, "");
  if (!path) return true;
  // Beside the repository root, a path may be written from its own project (console/src/…) or
  // doc folder (an image under docs/), and a name ending in "-" or a number prefix names a family.
  const bases = ["", `${from.split("/")[0]}/`];
  for (const base of bases) {
    const full = base + path;
    // A name written with a trailing slash is a folder, and only a folder will do.
    if (p.endsWith("/") && !/[*<>{}]/.test(p)) {
      if (fs.existsSync(full) && fs.statSync(full).isDirectory()) return true;
      continue;
    }
    for (const c of [full, `${full}.ts`, `${full}.tsx`, `${full}.mjs`]) if (fs.existsSync(c)) return true;
    if (/[-0-9]$/.test(full) && tracked.some((t) => t.startsWith(full))) return true;
  }
  return false;
}

const missing = [];
for (const f of files) {
  const text = fs.readFileSync(f, "utf8");
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    for (const m of line.matchAll(mention)) {
      const p = m[1].replace(/\.$/, "");
      // A URL path (`/api/…`) or a route pattern is not a repository path.
      // A quoted string in code is data (a storage key, a file name), not a pointer.
      const before = line[m.index - 1];
      if (before === "/" || before === '"' || before === "'" || /^public\/(web|console|vendor)\b/.test(p)) continue;
      if (!exists(p, f)) missing.push(`${f}:${i + 1}: ${p}`);
    }
  });
}
if (missing.length) {
  console.error(`${missing.length} path(s) named in comments or docs do not exist:\n${missing.join("\n")}`);
  process.exit(1);
}
console.log(`check-paths: every path named in ${files.length} files exists`);
