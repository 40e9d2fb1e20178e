#!/usr/bin/env node
// Build step: turn jq-wasm's Emscripten bundle into two files the Worker can import.
//
// Workers refuse to compile WebAssembly from bytes at run time, so the wasm that jq-wasm
// embeds as a base64 data URI is written out as a real `.wasm` module (which wrangler and
// the vitest pool hand to us precompiled), and the glue is rewritten as an ES module
// without the 1.3 MB data URI. Three small, anchored edits make the glue fit workerd:
//   - environment sniffing is forced off, so it never reaches for node:fs or self.location;
//   - stdin is consumed through a view instead of re-copying the rest of the input per byte;
//   - stdout/stderr grow by doubling instead of one reallocation per byte;
//   - the Node-only require() calls are removed so bundlers do not try to resolve them.
// Each edit must match exactly once; a jq-wasm upgrade that moves an anchor fails the build
// loudly here instead of failing at run time. The wasm is then metered (scripts/jq-metering.mjs)
// so every jq run is bounded in steps, stack and memory.
import { readFileSync, writeFileSync, mkdirSync, existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const gluePath = join(dirname(require.resolve("jq-wasm/package.json")), "dist/build/jq.js");
const outDir = join(root, "src/platform/jq/generated");
const outGlue = join(outDir, "jq-glue.js");
const outWasm = join(outDir, "jq.wasm");

// Current when both outputs are newer than jq-wasm's bundle and than this build step's own code.
const inputsMtime = Math.max(
  statSync(gluePath).mtimeMs,
  statSync(fileURLToPath(import.meta.url)).mtimeMs,
  statSync(join(root, "scripts/jq-metering.mjs")).mtimeMs,
);
if (existsSync(outGlue) && existsSync(outWasm) && Math.min(statSync(outGlue).mtimeMs, statSync(outWasm).mtimeMs) >= inputsMtime) {
  process.exit(0); // already current
}

let src = readFileSync(gluePath, "utf8");

function replaceOnce(pattern, replacement, what) {
  const matches = src.match(new RegExp(pattern.source, pattern.flags.includes("g") ? pattern.flags : pattern.flags + "g"));
  if (!matches || matches.length !== 1) {
    throw new Error(`extract-jq-wasm: expected exactly one match for ${what}, found ${matches ? matches.length : 0}`);
  }
  src = src.replace(pattern, replacement);
}

const uri = /"data:application\/octet-stream;base64,([A-Za-z0-9+/=]+)"/;
const m = src.match(uri);
if (!m) throw new Error("extract-jq-wasm: embedded wasm data URI not found");
const wasm = Buffer.from(m[1], "base64");
if (wasm.subarray(0, 4).toString("hex") !== "0061736d") throw new Error("extract-jq-wasm: payload is not wasm");
replaceOnce(uri, '""', "wasm data URI");

replaceOnce(/var ENVIRONMENT_IS_WEB = [^;]+;/, "var ENVIRONMENT_IS_WEB = false;", "web sniffing");
replaceOnce(/var ENVIRONMENT_IS_WORKER = [^;]+;/, "var ENVIRONMENT_IS_WORKER = false;", "worker sniffing");
replaceOnce(/var ENVIRONMENT_IS_NODE = [^;]+;/, "var ENVIRONMENT_IS_NODE = false;", "node sniffing");
replaceOnce(/stdinBuffer = stdinBuffer\.slice\(1\);/, "stdinBuffer = stdinBuffer.subarray(1);", "stdin consumption");
for (const name of ["stdoutBuffer", "stderrBuffer"]) {
  const grow = new RegExp(
    `const tmp = new Uint8Array\\(${name}\\.length \\+ 1\\);\\s*tmp\\.set\\(${name}, 0\\);\\s*tmp\\[tmp\\.length - 1\\] = charCode;\\s*${name} = tmp;`,
  );
  replaceOnce(grow, `${name} = __appendByte(${name}, charCode);`, `${name} growth`);
}
// Unreachable once sniffing is off, but a bundler still sees these and tries to resolve them.
for (const mod of ["fs", "path", "crypto"]) {
  replaceOnce(new RegExp(`require\\("${mod}"\\)`), "undefined", `require("${mod}")`);
}
// The heap may grow only to the engine's memory budget (jq-wasm's own cap is 256 MiB, more than
// a Worker isolate's whole memory); jq then reports "cannot allocate memory" and aborts.
replaceOnce(/var getHeapMax = \(\) => (\d+);/, 'var getHeapMax = () => Module["heapMax"] || $1;', "heap maximum");
replaceOnce(/(var maxHeapSize = getHeapMax\(\); if \(requestedSize > maxHeapSize\) \{)/, '$1 Module["onHeapExhausted"]();', "heap exhaustion hook");
// Emscripten's runtime messages (e.g. "Aborted()") would go to console.error; the engine
// classifies every abort itself, so they are dropped. jq's own diagnostics use stderr, not this.
replaceOnce(/\} console\.error\(message\); \}, preRun\(\)/, "} }, preRun()", "runtime message printer");
// Every run goes through the engine's guard, which arms the fuel right before jq's main starts
// (synchronously, so two queued runs can never share one run's fuel) and classifies a trap.
replaceOnce(
  /Module\.callMain\(\[\.\.\.flags, query, "\/dev\/stdin"\]\);/,
  'Module["guardRun"](() => Module.callMain([...flags, query, "/dev/stdin"]));',
  "callMain guard",
);
replaceOnce(/if \(typeof exports === 'object' && typeof module === 'object'\) \{[\s\S]*$/, "export default jq;\n", "CommonJS export block");

const helper = `// Generated by scripts/extract-jq-wasm.mjs from jq-wasm; do not edit.
function __appendByte(buf, byte) {
  const end = buf.byteOffset + buf.length;
  if (end < buf.buffer.byteLength) {
    const view = new Uint8Array(buf.buffer, buf.byteOffset, buf.length + 1);
    view[buf.length] = byte;
    return view;
  }
  const next = new Uint8Array(Math.max(256, buf.length * 2));
  next.set(buf, 0);
  next[buf.length] = byte;
  return next.subarray(0, buf.length + 1);
}
`;
src = helper + src.replace(/^"use strict";\n/, "");

mkdirSync(outDir, { recursive: true });
// Loaded only when there is something to meter: binaryen takes about a second to load, and every
// `npm start` (each end-to-end server too) runs this step, which usually finds its outputs current.
const { meterJqWasm } = await import("./jq-metering.mjs");
writeFileSync(outWasm, meterJqWasm(wasm));
writeFileSync(outGlue, src);
console.log(`extract-jq-wasm: wrote ${outWasm} (metered) and ${outGlue}`);
