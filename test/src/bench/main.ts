import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliBenchmark } from './cli.ts';
import { feedbackIngestBenchmark } from './feedback-ingest.ts';
import { otlpIngestBenchmark } from './otlp-ingest.ts';
import { modelListBenchmark } from './model-list.ts';
import { progressBenchmark } from './progress-writes.ts';
import { sessionProgressBenchmark } from './session-progress.ts';
import { claimBenchmark } from './claim-writes.ts';
import { assignedClaimBenchmark } from './claim-assigned-writes.ts';
import { itemsQueryBenchmark } from './items-query.ts';
import { callTextBenchmark } from './call-text.ts';
import { agreementBenchmark } from './agreement.ts';
import { webBenchmark } from './web.ts';
import { rulesBenchmark } from './rules.ts';
import { webhooksBenchmark } from './webhooks.ts';
import { printSection, runInfo, writeSection, type Section, type Settings } from './report.ts';
import { positiveInt } from '../harness/env-settings.ts';

// `npm run bench`: every benchmark in turn; BENCH_ONLY=<name,…> picks some. Exit code 1 when a
// run had bad responses, 3 when it ran cleanly but missed its target.

const BENCHMARKS: Record<string, (settings: Settings, workDir: string) => Promise<Section>> = {
  'model-list': modelListBenchmark,
  progress: progressBenchmark,
  'progress-session': sessionProgressBenchmark,
  claim: claimBenchmark,
  'claim-assigned': assignedClaimBenchmark,
  'items-query': itemsQueryBenchmark,
  'call-text': callTextBenchmark,
  'feedback-ingest': feedbackIngestBenchmark,
  'otlp-ingest': otlpIngestBenchmark,
  agreement: agreementBenchmark,
  rules: rulesBenchmark,
  cli: cliBenchmark,
  web: webBenchmark,
  webhooks: webhooksBenchmark,
};
const RESULTS_DIR = fileURLToPath(new URL('../../bench-results/', import.meta.url));

const settings: Settings = {
  seconds: positiveInt('BENCH_SECONDS', 10),
  warmupSeconds: positiveInt('BENCH_WARMUP_SECONDS', 2),
  rounds: positiveInt('BENCH_ROUNDS', 3),
  connections: positiveInt('BENCH_CONNECTIONS', 32),
};
// Both the server and the baseline run as they would in production.
process.env.NODE_ENV ??= 'production';

const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim()).filter(Boolean);
const unknown = only?.filter((name) => !(name in BENCHMARKS)) ?? [];
if (unknown.length) throw new Error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}`);

const run = runInfo(settings);
console.log(`benchmarks on node ${run.node}, ${run.cpus} CPUs; ${JSON.stringify(settings)}`);
let exitCode = 0;
for (const [name, benchmark] of Object.entries(BENCHMARKS)) {
  if (only && !only.includes(name)) continue;
  const workDir = mkdtempSync(join(tmpdir(), `loupe-bench-${name}-`));
  try {
    const section = await benchmark(settings, workDir);
    printSection(section);
    console.log(`wrote ${writeSection(RESULTS_DIR, run, section)}`);
    if (section.problems.length) exitCode = 1;
    else if (!section.passed && exitCode === 0) exitCode = 3;
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}
process.exit(exitCode);
