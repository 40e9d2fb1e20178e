/** The npm start output filter (scripts/dev-output-filter.mjs), on output captured from wrangler dev. */
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module script without type declarations
import { createDevOutputFilter } from "../../scripts/dev-output-filter.mjs";

const E = "\u001b[31m✘ \u001b[41;31m[\u001b[41;97mERROR\u001b[41;31m]\u001b[0m \u001b[1m";
const DNS_REPORT = [
  `${E}e = kj/async-io-unix.c++:1298: failed: DNS lookup failed.; params.host = hooks.example.com; params.service = \u001b[0m`,
  "",
  "  stack: /x/workerd@5186f7e /x/workerd@5187a70; sentryErrorContext = jsgInternalError; wdErrId = pk5g0m5ip1sigj71kp3irfdc",
  "",
  "",
];
const UNCAUGHT = [`${E}Uncaught Error: internal error; reference = 7depk8k5ciho89paqn00fso1 \u001b[0m`, "", ""];
const OUR_LINE =
  '\u001b[33m▲ [WARNING]\u001b[0m {"event":"delivery_attempt_failed","message_id":"m","via":"callback","attempt":1,"reason":"transport","final":false}';

function run(lines: string[], chunkSize = 7): string {
  let out = "";
  const f = createDevOutputFilter((l: string) => (out += l));
  const text = lines.join("\n");
  for (let i = 0; i < text.length; i += chunkSize) f.push(text.slice(i, i + chunkSize));
  f.end();
  return out;
}

describe("npm start output filter", () => {
  it("drops workerd's internal DNS/TLS reports and the uncaught internal error, keeping our structured line", () => {
    const out = run([
      "[wrangler:info] Ready on http://127.0.0.1:8787",
      ...DNS_REPORT,
      OUR_LINE,
      "",
      ...UNCAUGHT,
      "NOSENTRY SQLite alarm handler canceled with requestScheduledAlarm.; actorId = a",
      "[wrangler:info] GET /api/health 200 OK (3ms)",
    ]);
    expect(out).not.toContain("kj/");
    expect(out).not.toContain("workerd@");
    expect(out).not.toContain("internal error");
    expect(out).not.toContain("NOSENTRY");
    expect(out).toContain('"event":"delivery_attempt_failed"');
    expect(out).toContain("Ready on http://127.0.0.1:8787");
    expect(out).toContain("GET /api/health 200 OK");
  });

  it("passes every other line through byte for byte, whatever the chunking", () => {
    const lines = [
      "⎔ Starting local server...",
      `${E}Some other error the operator must see\u001b[0m`,
      "",
      "  at handler (src/index.ts:1:1)",
      "last line without newline",
    ];
    for (const size of [1, 3, 64, 10_000]) expect(run(lines, size)).toBe(`${lines.join("\n")}\n`);
  });
});
