import { beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { MAX_REQUEST_MS, RESPONSE_INVARIANTS } from './invariants.ts';
import { MAX_PEAK_RSS_MB, runFuzz, summaryLine, type FuzzReport, type Violation } from './runner.ts';

// The short fuzz run inside `npm test` (`npm run fuzz` is the long one, same code): generated
// requests against the real server, as its own process, on each database. FUZZ_SEED replays a run.
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);
const RUNS = 600;

function explain(violations: Violation[]): string {
  return violations.map((v) => `${v.invariant} (seed ${v.seed}${v.counterexample ? `, ${v.counterexample}` : ''}): ${v.detail}\n  request: ${v.request}`).join('\n');
}

describeEachBackend('fuzz: generated and hostile requests', (backend) => {
  let report: FuzzReport;
  beforeAll(async () => {
    report = await runFuzz({ backend, runs: RUNS, seed: SEED, concurrency: 1 });
    console.log(summaryLine(report));
  }, 180_000);

  const violationsOf = (...invariants: string[]) => report.violations.filter((v) => invariants.includes(v.invariant));

  it(`sent ${RUNS} requests, most of them past validation to the procedures`, () => {
    expect(report.requests).toBeGreaterThanOrEqual(RUNS);
    // The generators must reach the procedures, not only the HTTP layer's refusals.
    expect(report.statuses['200'] ?? 0, JSON.stringify(report.statuses)).toBeGreaterThan(RUNS / 20);
    for (const status of ['400', '401', '403', '404', '415']) expect(report.statuses[status] ?? 0, `status ${status}: ${JSON.stringify(report.statuses)}`).toBeGreaterThan(0);
  });

  it(`every request is answered, with no 5xx but 503 + Retry-After: ${RESPONSE_INVARIANTS['no-5xx']}`, () => {
    expect(explain(violationsOf('answered', 'no-5xx'))).toBe('');
  });

  it('every error body is JSON with a string reason and a string code, and every answer has X-Request-Id', () => {
    expect(explain(violationsOf('error-body', 'request-id'))).toBe('');
  });

  it(`OTLP ingest: ${RESPONSE_INVARIANTS['otlp-answer']}`, () => {
    expect(report.checks['otlp-answer'] ?? 0).toBeGreaterThan(RUNS / 30);
    expect(explain(violationsOf('otlp-answer'))).toBe('');
  });

  it(`no request takes ${MAX_REQUEST_MS} ms or more`, () => {
    expect(explain(violationsOf('under-2s'))).toBe('');
  });

  it(`the server still answers /health afterwards and its peak RSS stayed under ${MAX_PEAK_RSS_MB} MB`, () => {
    expect(explain(violationsOf('server-up', 'peak-rss'))).toBe('');
    expect(report.peakRssMb).toBeGreaterThan(0);
  });

  it('nothing a failed request carried is stored (and what succeeded requests carried is found)', () => {
    expect(report.markers.failed).toBeGreaterThan(50);
    expect(report.markers.storedOfFailed).toEqual([]);
    // The check can see markers: those of succeeded writes are in the database.
    expect(report.markers.succeeded).toBeGreaterThan(0);
    expect(report.markers.storedOfSucceeded).toBeGreaterThan(0);
  });
});
