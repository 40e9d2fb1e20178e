/** CSV of the runs export: RFC 4180 quoting, CRLF, formula injection neutralised. Pure. */
import { describe, expect, it } from "vitest";
import { csvCell, csvRow, toCsv } from "../../src/observability/csv";
import { RUN_CSV_COLUMNS, runsCsv } from "../../src/observability/runs-csv";

describe("csv cells", () => {
  it("quotes a field holding a comma, a quote, CR or LF, doubling quotes", () => {
    expect(csvCell("plain")).toBe("plain");
    expect(csvCell("a,b")).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell("two\nlines")).toBe('"two\nlines"');
    expect(csvCell("cr\rhere")).toBe('"cr\rhere"');
    expect(csvCell("")).toBe("");
    expect(csvCell(null)).toBe("");
    expect(csvCell(undefined)).toBe("");
    expect(csvCell(42)).toBe("42");
    expect(csvCell(false)).toBe("false");
  });

  it("neutralises cells a spreadsheet would evaluate: =, +, -, @, tab, CR", () => {
    expect(csvCell('=HYPERLINK("http://x")')).toBe('"\'=HYPERLINK(""http://x"")"');
    expect(csvCell("=1+1")).toBe("'=1+1");
    expect(csvCell("+15551234")).toBe("'+15551234");
    expect(csvCell("-2")).toBe("'-2");
    expect(csvCell("@SUM(A1)")).toBe("'@SUM(A1)");
    expect(csvCell("\tcmd")).toBe("'\tcmd");
    expect(csvCell("\r=x")).toBe('"\'\r=x"');
    // Only the first character matters.
    expect(csvCell("a=b")).toBe("a=b");
    expect(csvCell("user@example.com")).toBe("user@example.com");
  });

  it("ends every record, the header included, with CRLF", () => {
    expect(csvRow(["a", 1, null])).toBe("a,1,\r\n");
    expect(
      toCsv(
        ["x", "y"],
        [
          { x: "1", y: "a,b" },
          { x: "=2", y: null },
        ],
      ),
    ).toBe('x,y\r\n1,"a,b"\r\n\'=2,\r\n');
    expect(toCsv(["x"], [])).toBe("x\r\n");
  });
});

describe("the runs export", () => {
  it("writes the documented columns in order, an outsider's address neutralised", () => {
    const csv = runsCsv([
      {
        trace_id: "t1",
        kind: "turn",
        trigger: "channel",
        target: { kind: "tool", name: "echo", version: null },
        route_name: "r",
        thread_id: "bridge:r:+1555",
        interaction_id: "t1",
        user_id: "+15550001",
        principal: null,
        started_at: "2026-01-01T00:00:00.000Z",
        duration_ms: 12,
        outcome: "ok",
        step_count: 1,
        has_error: false,
      },
    ]);
    const [header, row, end] = csv.split("\r\n");
    expect(header).toBe(RUN_CSV_COLUMNS.join(","));
    expect(header).toBe(
      "trace_id,kind,trigger,target_kind,target_name,target_version,route_name,thread_id,interaction_id,user_id,principal,started_at,duration_ms,outcome,step_count,has_error",
    );
    expect(row).toBe("t1,turn,channel,tool,echo,,r,bridge:r:+1555,t1,'+15550001,,2026-01-01T00:00:00.000Z,12,ok,1,false");
    expect(end).toBe("");
  });
});
