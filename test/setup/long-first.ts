/**
 * The run's file order: vitest's own (by project; within one, files that failed or ran longest
 * last time first, else larger files first), except that the files known to run longest start
 * first in their project. A clean clone has no record of last time's durations, and by size the
 * four small fuzz files (test/hardening/fuzz-<n>.test.ts, a line each over test/hardening/fuzz.ts)
 * would start last and leave one slot running them alone at the end.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node";

const LONG = [
  /test\/hardening\/fuzz-\d+\.test\.ts$/,
  /test\/hardening\/authz-matrix\.test\.ts$/,
  /test\/hardening\/(data-lifetime|link-authority)\.test\.ts$/,
  /test\/perf\//,
  /test\/browser\/console\.browser\.test\.ts$/,
  /test\/e2e\/logs\.e2e\.test\.ts$/,
];

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const long = (f: TestSpecification) => LONG.some((re) => re.test(f.moduleId));
    // Stable within each project: the long files first, each group in vitest's order.
    const byProject = new Map<string, TestSpecification[]>();
    for (const f of sorted) {
      const name = f.project.name;
      const group = byProject.get(name);
      if (group) group.push(f);
      else byProject.set(name, [f]);
    }
    return [...byProject.values()].flatMap((group) => [...group.filter(long), ...group.filter((f) => !long(f))]);
  }
}
