/**
 * The web chat's visible strings: `t(key)` reads the table in force, with `{name}` placeholders
 * filled from `vars`. English (src/web-chat/strings/en.ts) answers any key the table lacks.
 */
import { EN, type StringKey } from "../../src/web-chat/strings/en";

let table: Partial<Record<StringKey, string>> = {};

/** Puts a language's table (and a site's overrides on top) in force. */
export function setStrings(next: Partial<Record<StringKey, string>>): void {
  table = next;
}

export function t(key: StringKey, vars?: Record<string, string | number>): string {
  const text = table[key] ?? EN[key];
  return vars ? text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m)) : text;
}
