#!/usr/bin/env node
// The operations the interface spec names in §4 (endpoints), as method + path, written to
// test/hardening/spec-operations.json. The workers suite checks that the route table declares
// every one of them (test/hardening/spec-coverage.test.ts), and the README quotes the count.
//
// The spec lives beside the repository (../shared/spec/interface-spec.txt by default; SPEC_PATH
// overrides). `--check` compares instead of writing and exits 1 on a difference, so a spec change
// is noticed the day it lands: run it after the spec moves, then commit the regenerated list.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const specPath = process.env.SPEC_PATH ?? path.join(root, "..", "shared", "spec", "interface-spec.txt");
const outPath = path.join(root, "test", "hardening", "spec-operations.json");

const METHOD = "GET|POST|PUT|PATCH|DELETE";
// §4.11 abbreviates the state record doors with "..."; the record path they stand for.
const RECORD = "/api/states/{name}/records/{target_kind}/{target_name}/{kind}/{key}";

/** Every `METHOD /api/…` the §4 text names, in order of first mention, without query strings. */
export function specOperations(text) {
  const start = text.indexOf("## 4. Endpoints");
  const end = text.indexOf("## 5.", start);
  if (start < 0 || end < 0) throw new Error("spec-operations: no '## 4. Endpoints' section found");
  const section = text.slice(start, end);
  const found = [];
  // Tables and bold headings write `GET /api/x`; the §4.11 lists write GET `/api/x`, and
  // "GET and POST `/api/x`" for two methods on one path.
  for (const m of section.matchAll(new RegExp(`\`(${METHOD}) (/api[^\`\\s]*)\``, "g"))) found.push([m[1], m[2]]);
  for (const m of section.matchAll(new RegExp(`((?:(?:${METHOD}) and )*(?:${METHOD})) \`((?:/api|\\.\\.\\.)[^\`]*)\``, "g"))) {
    for (const method of m[1].split(" and ")) found.push([method, m[2]]);
  }
  const seen = new Set();
  const out = [];
  for (const [method, raw] of found) {
    let p = raw.split("?")[0];
    if (p.startsWith(".../records/")) p = `/api/states/{name}/records/${p.slice(".../records/".length)}`;
    else if (p.startsWith(".../{key}")) p = RECORD + p.slice(".../{key}".length);
    else if (p.startsWith("...")) throw new Error(`spec-operations: an abbreviated path this script cannot expand: ${p}`);
    const key = `${method} ${p}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push({ method, path: p });
    }
  }
  return out;
}

const ops = specOperations(readFileSync(specPath, "utf8"));
const text = `${JSON.stringify({ source: "interface-spec.txt §4", count: ops.length, operations: ops }, null, 2)}\n`;
if (process.argv.includes("--check")) {
  const current = readFileSync(outPath, "utf8");
  if (current !== text) {
    console.error(`spec-operations: ${path.relative(root, outPath)} is out of date with the spec; run node scripts/spec-operations.mjs`);
    process.exit(1);
  }
  console.log(`spec-operations: ${ops.length} operations, list up to date`);
} else {
  writeFileSync(outPath, text);
  console.log(`spec-operations: wrote ${ops.length} operations to ${path.relative(root, outPath)}`);
}
