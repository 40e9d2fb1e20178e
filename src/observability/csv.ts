/**
 * CSV for the runs export (RFC 4180). Pure. Every field is quoted when it holds a comma,
 * a double quote, CR or LF (quotes doubled); records end with CRLF, the header included. A cell
 * that a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a tab or CR) is
 * neutralised with a leading `'` (OWASP "CSV injection"), so an address or a name chosen by an
 * outsider never runs in the operator's spreadsheet. Numbers are written as numbers (a negative
 * number is never produced here: durations and counts are non-negative).
 */

/** Characters that make a spreadsheet evaluate a cell. */
const FORMULA_START = /^[=+\-@\t\r]/;

/** One cell's text: neutralised, then quoted if needed. */
export function csvCell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  const safe = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** One record, CRLF-terminated. */
export function csvRow(cells: Array<string | number | boolean | null | undefined>): string {
  return `${cells.map(csvCell).join(",")}\r\n`;
}

/** A whole document: the header, then each row in `columns` order. */
export function toCsv<T extends Record<string, string | number | boolean | null | undefined>>(columns: ReadonlyArray<keyof T & string>, rows: T[]): string {
  return csvRow([...columns]) + rows.map((r) => csvRow(columns.map((c) => r[c]))).join("");
}
