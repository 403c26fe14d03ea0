import type { Backend } from '../harness/databases.ts';
import { benchBackends, type Section, type Settings } from './report.ts';
import { runWriteComparison, type WriteBench } from './write-comparison.ts';

// A write benchmark's report: one comparison per database, SQLite always, PostgreSQL when
// TEST_DATABASE_URL names a server to create a fresh database on (else a printed notice).

/**
 * The least req/s ratio Loupe/baseline per database. SQLite's is higher: the work is all in the
 * server's process there, and what Loupe adds to the driver's is what this measures.
 */
export const WRITE_TARGET_RATIO: Record<Backend, number> = { sqlite: 0.65, postgresql: 0.5 };

export async function writeSection(bench: WriteBench, description: string, settings: Settings, workDir: string): Promise<Section> {
  const { backends, notes } = benchBackends(bench.name);
  const details: Record<string, unknown> = notes.length ? { postgresql: notes.join('; ') } : {};
  const targets = bench.targets ?? WRITE_TARGET_RATIO;
  const section: Section = {
    name: bench.name,
    description,
    target: {
      metric: `requests/s ratio Loupe/baseline at concurrency ${settings.connections} (PostgreSQL ≥ ${targets.postgresql}; SQLite)`,
      min: targets.sqlite,
    },
    comparisons: [],
    details,
    problems: [],
    passed: false,
  };
  for (const backend of backends) {
    const result = await runWriteComparison(bench, backend, settings, workDir);
    section.comparisons.push({ ...result.comparison, target: targets[backend] });
    section.problems.push(...result.problems);
    details[backend] = result.details;
  }
  section.passed = section.problems.length === 0 && section.comparisons.every((c) => c.ratio >= c.target!);
  return section;
}
