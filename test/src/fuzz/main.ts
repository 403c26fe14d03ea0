import { BACKENDS, postgresAvailable, type Backend } from '../harness/databases.ts';
import { runFuzz, summaryLine } from './runner.ts';
import { positiveInt } from '../harness/env-settings.ts';

// `npm run fuzz`: the long run, on SQLite and (with TEST_DATABASE_URL) PostgreSQL. FUZZ_RUNS
// requests per backend (default 20,000), FUZZ_SECONDS to stop earlier, FUZZ_SEED to replay a run,
// FUZZ_CONCURRENCY streams at once, FUZZ_BACKENDS=sqlite|postgresql to pick. Exit code 1 on any violation.

const runs = positiveInt('FUZZ_RUNS', 20_000);
const seconds = process.env.FUZZ_SECONDS ? positiveInt('FUZZ_SECONDS', 1) : undefined;
const seed = positiveInt('FUZZ_SEED', Date.now() % 2 ** 31);
const concurrency = positiveInt('FUZZ_CONCURRENCY', 2);
const wanted = (process.env.FUZZ_BACKENDS ?? BACKENDS.join(',')).split(',').map((s) => s.trim()) as Backend[];

let failed = false;
for (const backend of BACKENDS.filter((b) => wanted.includes(b))) {
  if (backend === 'postgresql' && !postgresAvailable) {
    console.log('fuzz [postgresql] SKIPPED: TEST_DATABASE_URL is unset');
    continue;
  }
  const report = await runFuzz({ backend, runs, seed, concurrency, log: console.log, ...(seconds ? { seconds } : {}) });
  console.log(summaryLine(report));
  for (const v of report.violations) {
    failed = true;
    console.log(`VIOLATION ${v.invariant} (seed ${v.seed}${v.counterexample ? `, ${v.counterexample}` : ''}): ${v.detail}\n  request: ${v.request}`);
  }
  for (const line of report.serverErrors.slice(0, 10)) console.log(`server error log: ${JSON.stringify(line).slice(0, 1000)}`);
}
process.exitCode = failed ? 1 : 0;
