import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { postgresAvailable, type Backend } from '../harness/databases.ts';
import type { Measurement } from './load.ts';

// What every benchmark reports, and how: a table on stdout and one JSON file per benchmark in
// test/bench-results/, shaped `{run, sections: {<benchmark>: …}}` so benchmarks can be added (or
// their files merged) without changing readers.

export type Settings = { seconds: number; warmupSeconds: number; rounds: number; connections: number };

/**
 * Rounds per side, at least, of a comparison of Loupe with Loupe (a session cookie against a key,
 * rules or webhooks against none): its ratio is expected near 1 and held to 0.85–0.95, while one
 * round's rate on a machine that shares its CPUs moves by up to a fifth either way. More rounds
 * bring the median nearer the true ratio, on either side of the target.
 */
export const SELF_COMPARISON_ROUNDS = 6;

/**
 * The rounds per side of a comparison of Loupe with Loupe: BENCH_ROUNDS, and at least
 * SELF_COMPARISON_ROUNDS; always even. The order alternates round by round, and rates drift over
 * a run (tables grow: webhook rounds on SQLite fell from 19k to 12k records/s over one run), so
 * only an even count gives each side the first turn as often as the other.
 */
export function selfComparisonRounds(settings: Settings): number {
  const rounds = Math.max(settings.rounds, SELF_COMPARISON_ROUNDS);
  return rounds + (rounds % 2);
}

/** Medians over rounds of one side of a comparison. */
export type Side = { rps: number; p50_ms: number; p99_ms: number; rounds: Measurement[] };
/** `target`: the least ratio this comparison must reach, where it differs from its section's. */
export type Comparison = { case: string; status: number; loupe: Side; baseline: Side; ratio: number; target?: number };

export type Section = {
  name: string;
  description: string;
  target: { metric: string; min: number };
  comparisons: Comparison[];
  details?: Record<string, unknown>;
  problems: string[];
  passed: boolean;
};

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function side(rounds: Measurement[]): Side {
  return {
    rps: median(rounds.map((m) => m.rps)),
    p50_ms: median(rounds.map((m) => m.latency_ms.p50)),
    p99_ms: median(rounds.map((m) => m.latency_ms.p99)),
    rounds,
  };
}

export function runInfo(settings: Settings) {
  return {
    at: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? 'unknown',
    memory_gib: +(totalmem() / 2 ** 30).toFixed(1),
    settings,
  };
}

export function printSection(section: Section): void {
  const rows = section.comparisons.map((c) => ({
    case: c.case,
    'loupe req/s': Math.round(c.loupe.rps),
    'baseline req/s': Math.round(c.baseline.rps),
    ratio: c.ratio.toFixed(3),
    ...(c.target === undefined ? {} : { target: c.target }),
    'loupe p50/p99 ms': `${c.loupe.p50_ms} / ${c.loupe.p99_ms}`,
    'baseline p50/p99 ms': `${c.baseline.p50_ms} / ${c.baseline.p99_ms}`,
    'rounds (loupe req/s)': c.loupe.rounds.map((m) => Math.round(m.rps)).join(' '),
    'rounds (baseline req/s)': c.baseline.rounds.map((m) => Math.round(m.rps)).join(' '),
  }));
  console.log(`\n${section.name}: ${section.description}`);
  console.table(rows);
  const verdict = section.passed ? 'PASS' : 'FAIL';
  console.log(`${verdict}: target ${section.target.metric} ≥ ${section.target.min}`);
  for (const problem of section.problems) console.log(`  problem: ${problem}`);
}

export function writeSection(dir: string, run: ReturnType<typeof runInfo>, section: Section): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${section.name}.json`);
  writeFileSync(file, JSON.stringify({ run, sections: { [section.name]: section } }, null, 2) + '\n');
  return file;
}

/** The databases a benchmark runs on: SQLite, and PostgreSQL when TEST_DATABASE_URL names one (else a note says it was skipped). */
export function benchBackends(name: string): { backends: Backend[]; notes: string[] } {
  if (postgresAvailable) return { backends: ['sqlite', 'postgresql'], notes: [] };
  const note = 'PostgreSQL half skipped: TEST_DATABASE_URL is unset';
  console.log(`${name}: ${note}`);
  return { backends: ['sqlite'], notes: [note] };
}
