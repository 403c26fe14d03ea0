import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { createUserViaCli, startChildServer, type ChildServer, type LogLine } from '../harness/child-server.ts';
import { freshDatabase, type Backend, type TestDatabase } from '../harness/databases.ts';
import { checkOutcome, MAX_REQUEST_MS, RESPONSE_INVARIANTS, type InvariantName } from './invariants.ts';
import { markerOf, storedMarkers, withMarker } from './markers.ts';
import { describeRequest, requestArbitrary, type FuzzRequest, type Key, type World } from './requests.ts';
import { send } from './send.ts';

export type FuzzOptions = {
  backend: Backend;
  /** Requests to send (split over the streams). */
  runs: number;
  /** Stop sending after this long, whatever `runs` says. */
  seconds?: number;
  seed: number;
  /** Streams of requests sent at once, each with its own seed (seed, seed + 1, …). */
  concurrency: number;
  log?: (line: string) => void;
};

/** The server's peak resident memory may not exceed this (it runs with --max-old-space-size=384). */
export const MAX_PEAK_RSS_MB = 700;
/**
 * Limits the server runs with: bodies up to 256 KiB (larger than any legitimate body the
 * generators make, small enough that 413 is reached cheaply), and an in-flight body budget small
 * enough that concurrent large bodies reach its 503 (the default, 256 MiB, is never reached here).
 */
const SERVER_ENV = { LOUPE_LOG_LEVEL: 'warn', LOUPE_MAX_BODY_BYTES: String(256 * 1024), LOUPE_BODY_BUDGET_BYTES: String(2 * 1024 * 1024), LOUPE_BODY_WAIT_MS: '250' };
/** How long the client waits before calling a request unanswered (the 2 s invariant is checked apart). */
const PATIENCE_MS = 10_000;

export type Violation = { invariant: string; detail: string; request: string; seed: number; counterexample?: string };

export type FuzzReport = {
  backend: Backend;
  seed: number;
  requests: number;
  statuses: Record<string, number>;
  /** How many times each invariant was checked. */
  checks: Record<string, number>;
  violations: Violation[];
  maxMs: number;
  /** Requests answered over the limit once, then sent again (the second answer decides). */
  slowThenReplayed: number;
  peakRssMb: number;
  markers: { failed: number; succeeded: number; storedOfSucceeded: number; storedOfFailed: number[] };
  /** Error-level lines of the server's log (a 5xx logs one). */
  serverErrors: LogLine[];
};

/** The project and users every run targets: entity `fza` (member, viewer) and `fzb` (the other entity). */
const PROJECT = 'fza/x';
const OTHER_PROJECT = 'fzb/x';

/**
 * One fuzz run on one backend: a fresh database, users made with the admin tool, the server as its
 * own process (as `npm start` runs it), a little state made through the API so generated requests
 * name ids that exist, then `runs` generated requests each checked against the response
 * invariants, and at the end the run invariants: the server still answers /health, its peak RSS
 * is bounded, and no failed request's marker is stored.
 */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const log = options.log ?? (() => undefined);
  let database: TestDatabase | undefined;
  let server: ChildServer | undefined;
  try {
    database = await freshDatabase(options.backend);
    // One after the other: the first migrates the database.
    const member = await createUserViaCli(database.url, { entity: 'fza', role: 'member', username: 'fuzz-member' });
    const viewer = await createUserViaCli(database.url, { entity: 'fza', role: 'viewer', username: 'fuzz-viewer' });
    const other = await createUserViaCli(database.url, { entity: 'fzb', role: 'member', username: 'fuzz-other' });
    server = await startChildServer({ databaseUrl: database.url, env: SERVER_ENV });
    const base = new URL(server.url);
    const world = await seed(server.url, { member, viewer, 'other-entity': other });
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Parameters<typeof requestArbitrary>[0];
    const arbitrary = requestArbitrary(doc, world);

    const report: FuzzReport = {
      backend: options.backend,
      seed: options.seed,
      requests: 0,
      statuses: {},
      checks: Object.fromEntries(Object.keys(RESPONSE_INVARIANTS).map((name) => [name, 0])),
      violations: [],
      maxMs: 0,
      slowThenReplayed: 0,
      peakRssMb: 0,
      markers: { failed: 0, succeeded: 0, storedOfSucceeded: 0, storedOfFailed: [] },
      serverErrors: [],
    };
    const failed = new Set<number>();
    const succeeded = new Set<number>();
    let sequence = 0;

    const sendOnce = async (request: FuzzRequest) => {
      const n = ++sequence;
      const { body, marked } = withMarker(request.body, markerOf(n));
      const outcome = await send(base, request, body, PATIENCE_MS);
      report.requests++;
      const status = outcome.kind === 'answer' ? String(outcome.status) : outcome.error.slice(0, 40);
      report.statuses[status] = (report.statuses[status] ?? 0) + 1;
      report.maxMs = Math.max(report.maxMs, outcome.ms);
      if (marked) (outcome.kind === 'answer' && outcome.status < 300 ? succeeded : failed).add(n);
      if (process.env.FUZZ_TRACE) log(`#${n} ${status} ${Math.round(outcome.ms)} ms ${describeRequest(request).slice(0, 400)}`);
      const verdict = checkOutcome(request, outcome);
      for (const name of verdict.checked) report.checks[name] = (report.checks[name] ?? 0) + 1;
      return verdict.violated;
    };
    const exchange = async (request: FuzzRequest): Promise<void> => {
      let violated = await sendOnce(request);
      if (violated.some((v) => v.invariant === 'under-2s')) {
        // Other processes share the machine: a slow answer counts only if the same request is slow again.
        report.slowThenReplayed++;
        violated = [...violated.filter((v) => v.invariant !== 'under-2s'), ...(await sendOnce(request))];
      }
      if (violated.length) throw new Error(`${violated[0]!.invariant}: ${violated[0]!.detail}`);
    };

    const started = Date.now();
    const perStream = Math.ceil(options.runs / options.concurrency);
    await Promise.all(
      Array.from({ length: options.concurrency }, async (_, i) => {
        const seed = options.seed + i;
        const result = await fc.check(fc.asyncProperty(arbitrary, exchange), {
          seed,
          numRuns: perStream,
          ...(options.seconds ? { interruptAfterTimeLimit: options.seconds * 1000, markInterruptAsFailure: false } : {}),
        });
        if (result.failed) {
          const example = result.counterexample?.[0] as FuzzRequest | undefined;
          const message = result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance);
          report.violations.push({
            invariant: message.split(':')[0] ?? 'unknown',
            detail: message,
            request: example ? describeRequest(example) : '(none)',
            seed,
            counterexample: `seed ${seed}, path "${result.counterexamplePath}"`,
          });
        }
      }),
    );
    log(`[${options.backend}] sent ${report.requests} requests in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // The run invariants.
    const health = await fetch(`${server.url}/health`).then((r) => r.status, (e: Error) => e.message);
    report.checks['server-up'] = 1;
    if (health !== 200) report.violations.push({ invariant: 'server-up', detail: `GET /health after the run: ${health}`, request: '', seed: options.seed });
    report.peakRssMb = peakRssMb(server.child.pid!);
    report.checks['peak-rss'] = 1;
    if (report.peakRssMb > MAX_PEAK_RSS_MB) {
      report.violations.push({ invariant: 'peak-rss', detail: `server VmHWM ${report.peakRssMb} MB > ${MAX_PEAK_RSS_MB} MB`, request: '', seed: options.seed });
    }
    report.serverErrors = server.logs.filter((line) => line.level === 50 || line.level === 60 || line.level === 'error' || line.level === 'fatal');
    await server.stop();

    const stored = await storedMarkers(database.url);
    report.checks['nothing-written-by-failure'] = failed.size;
    report.markers = {
      failed: failed.size,
      succeeded: succeeded.size,
      storedOfSucceeded: [...succeeded].filter((n) => stored.has(n)).length,
      storedOfFailed: [...failed].filter((n) => stored.has(n)),
    };
    if (report.markers.storedOfFailed.length) {
      report.violations.push({
        invariant: 'nothing-written-by-failure',
        detail: `markers of failed requests found stored: ${report.markers.storedOfFailed.slice(0, 20).map(markerOf).join(', ')}`,
        request: '',
        seed: options.seed,
      });
    }
    return report;
  } finally {
    await server?.stop('SIGKILL');
    await database?.drop();
  }
}

/** Peak resident memory of a process, from /proc (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN);
  return Math.round(kb / 1024);
}

/** Calls, a queue with items, a spec and a feedback record in the target project, and a queue of the other entity. */
async function seed(url: string, keys: Record<'member' | 'viewer' | 'other-entity', Key>): Promise<World> {
  const call = async (key: Key, method: string, path: string, body?: unknown) => {
    const response = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key.api_key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`seeding: ${method} ${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as Record<string, any>;
  };
  const started_at = new Date().toISOString();
  const callIds = ['seed-call-1', 'seed-call-2', 'seed-call-3', 'seed-call-4'];
  await call(keys.member, 'POST', '/calls/batch/create', { batch: callIds.map((id) => ({ project_id: PROJECT, id, op_name: 'seed', started_at })) });
  const queue = (await call(keys.member, 'POST', '/annotation_queues', { project_id: PROJECT, name: 'seed-queue' })).id as string;
  const deleted = (await call(keys.member, 'POST', '/annotation_queues', { project_id: PROJECT, name: 'seed-deleted' })).id as string;
  await call(keys.member, 'DELETE', `/annotation_queues/${deleted}?project_id=${encodeURIComponent(PROJECT)}`);
  await call(keys.member, 'POST', `/annotation_queues/${queue}/items`, { project_id: PROJECT, call_ids: callIds });
  const items = (await call(keys.member, 'POST', `/annotation_queues/${queue}/items/query`, { project_id: PROJECT })).items as { id: string }[];
  const spec = await call(keys.member, 'POST', '/annotation_specs', { project_id: PROJECT, name: 'seed-spec', field_schema: { type: 'object', properties: { score: { type: 'number' } } } });
  const feedback = await call(keys.member, 'POST', '/feedback/create', { project_id: PROJECT, svc_ref: 'svc:///fza/x/call/seed-call-1', feedback_type: 'seed', payload: { ok: true } });
  const foreign = (await call(keys['other-entity'], 'POST', '/annotation_queues', { project_id: OTHER_PROJECT, name: 'seed-foreign' })).id as string;
  return {
    project: PROJECT,
    otherProject: OTHER_PROJECT,
    keys,
    ids: {
      queue_id: [queue, queue, deleted, foreign],
      item_id: items.map((item) => item.id),
      call_id: callIds,
      feedback_id: [feedback.id as string],
      spec_ref: [spec.ref as string],
    },
  };
}

/** The summary line a closing note can quote. */
export function summaryLine(report: FuzzReport): string {
  const statuses = Object.entries(report.statuses)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, count]) => `${status}×${count}`)
    .join(' ');
  const checks = Object.values(report.checks).reduce((a, b) => a + b, 0);
  return (
    `fuzz [${report.backend}] seed ${report.seed}: ${report.requests} requests, ${checks} invariant checks ` +
    `(${Object.entries(report.checks).map(([name, n]) => `${name} ${n}`).join(', ')}); statuses ${statuses}; ` +
    `max ${Math.round(report.maxMs)} ms (${report.slowThenReplayed} over ${MAX_REQUEST_MS} ms once, sent again); server peak RSS ${report.peakRssMb} MB; markers: ${report.markers.succeeded} succeeded ` +
    `(${report.markers.storedOfSucceeded} found stored), ${report.markers.failed} failed (${report.markers.storedOfFailed.length} found stored); ` +
    `${report.violations.length} violation(s)`
  );
}

export type { InvariantName };
