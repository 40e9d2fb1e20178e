/**
 * The tests take the bindings and the Worker under test from "cloudflare:workers" (`env`,
 * `exports.default`), as vitest-pool-workers documents; its "cloudflare:test" `env` and `SELF` are
 * deprecated. A plain Node test (no wrangler dev) so that it can read the test sources.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const TEST_DIR = join(import.meta.dirname, "..");
const MODULE = "cloudflare:test";
const DEPRECATED = new Set(["env", "SELF"]);

function isModule(node: ts.Node | undefined): boolean {
  return node !== undefined && ts.isStringLiteral(node) && node.text === MODULE;
}

/** The expression an `import("cloudflare:test")` call ends up in, past `await` and parentheses. */
function useOf(call: ts.Node): ts.Node {
  let node = call;
  while (ts.isAwaitExpression(node.parent) || ts.isParenthesizedExpression(node.parent)) node = node.parent;
  return node.parent;
}

/** What one source file takes from "cloudflare:test" that it should not, each as `line: reason`. */
function deprecatedUses(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const report = (node: ts.Node, what: string) => found.push(`${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${what}`);
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && isModule(node.moduleSpecifier)) {
      const bindings = node.importClause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) report(node, "imports the whole module, which includes env and SELF");
      if (bindings && ts.isNamedImports(bindings)) {
        for (const el of bindings.elements) {
          const name = (el.propertyName ?? el.name).text;
          if (DEPRECATED.has(name)) report(el, `imports ${name}`);
        }
      }
    } else if (ts.isExportDeclaration(node) && isModule(node.moduleSpecifier)) {
      const clause = node.exportClause;
      if (!clause || ts.isNamespaceExport(clause)) report(node, "re-exports the whole module, which includes env and SELF");
      else {
        for (const el of clause.elements) {
          const name = (el.propertyName ?? el.name).text;
          if (DEPRECATED.has(name)) report(el, `re-exports ${name}`);
        }
      }
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && isModule(node.arguments[0])) {
      const use = useOf(node);
      if (ts.isVariableDeclaration(use) && ts.isObjectBindingPattern(use.name)) {
        for (const el of use.name.elements) {
          const name = el.propertyName ?? el.name;
          if (ts.isIdentifier(name) && DEPRECATED.has(name.text)) report(el, `imports ${name.text} dynamically`);
        }
      } else if (ts.isPropertyAccessExpression(use)) {
        if (DEPRECATED.has(use.name.text)) report(use, `imports ${use.name.text} dynamically`);
      } else {
        report(node, "imports the whole module dynamically, which includes env and SELF");
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("test imports", () => {
  it('no test file takes the deprecated env or SELF from "cloudflare:test"', () => {
    const files = readdirSync(TEST_DIR, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts") && !f.split(/[\\/]/).includes("node_modules"));
    expect(files.length).toBeGreaterThan(100);
    const offenders = files.flatMap((f) => {
      const text = readFileSync(join(TEST_DIR, f), "utf8");
      return text.includes(MODULE) ? deprecatedUses(f, text).map((use) => `test/${f}:${use}`) : [];
    });
    expect(offenders, 'use `import { env, exports } from "cloudflare:workers"` and `exports.default.fetch(...)` instead').toEqual([]);
  });

  it("recognises each way a file could take them", () => {
    const sample = [
      'import { env, runInDurableObject } from "cloudflare:test";',
      'import { SELF as worker } from "cloudflare:test";',
      'import * as t from "cloudflare:test";',
      'export { env } from "cloudflare:test";',
      'const { env: e } = await import("cloudflare:test");',
      'const s = (await import("cloudflare:test")).SELF;',
      'const m = await import("cloudflare:test");',
      'import { env as allowed } from "cloudflare:workers";',
      'import { runInDurableObject as run, type D1Migration } from "cloudflare:test";',
      'const { applyD1Migrations } = await import("cloudflare:test");',
    ].join("\n");
    expect(deprecatedUses("sample.ts", sample)).toEqual([
      "1: imports env",
      "2: imports SELF",
      "3: imports the whole module, which includes env and SELF",
      "4: re-exports env",
      "5: imports env dynamically",
      "6: imports SELF dynamically",
      "7: imports the whole module dynamically, which includes env and SELF",
    ]);
  });
});
