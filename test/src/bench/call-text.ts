import { join } from 'node:path';
import { positiveInt } from '../harness/env-settings.ts';
import { freshDatabase, withClient, type Backend, type TestDatabase } from '../harness/databases.ts';
import { basicAuth, call } from './bench-rest.ts';
import { buildTextProject, callId, NEEDLE, NEEDLE_EVERY, needleCalls, textOwner, type TextProject } from './call-text-fixture.ts';
import { startLoupe, type Target } from './child.ts';
import { benchBackends, median, type Section, type Settings } from './report.ts';
import { measureSequence, type PlannedRequest, type SequenceMeasurement } from './sequence-load.ts';

// How POST /calls/query with a full-text `text` grows with the project (contract 5.1: "its cost
// does not grow with the project's size"): p50/p95 of a page of 50 calls whose inputs hold a word
// that 1 call in NEEDLE_EVERY holds, and of the next page by its cursor. One server process and
// database holds a project of 1,000,000 calls and one of 10,000 beside it; a second holds only a
// project of 10,000 — the database before it grew. The three are measured in alternating rounds
// (the machine's speed drifts over minutes, so figures taken at different times do not compare),
// and the target compares the large project with the small one alone: both databases' text
// indexes are one per database, not per project, so the small project beside the large one
// shares some of its cost. One request at a time, so that a latency is the query's and not time
// spent queueing.

const SMALL = 10_000;
/** BENCH_TEXT_CALLS sets the large project's size, for a quick look. */
const LARGE = positiveInt('BENCH_TEXT_CALLS', 1_000_000);
const PAGE = 50;
const CONNECTIONS = 1;
/** Target: p95 on the large project at most this many times p95 on the small one alone, per case. */
const MAX_GROWTH = 3;
/** Rounds of this benchmark are short: each case is one query repeated, steady after a second. */
const MAX_SECONDS = 5;

type Case = { name: string; cursor: boolean };
const CASES: Case[] = [
  { name: `text, first page of ${PAGE}`, cursor: false },
  { name: 'text, next page by cursor', cursor: true },
];

/** A project on a server, and what else its database holds. */
type Subject = { project: TextProject; label: string; url: string; key: string };

type Row = { database: Backend; case: string; project: string; p50_ms: number; p95_ms: number; p99_ms: number; rps: number; rounds: SequenceMeasurement[] };

/** The request of a case on a project, checked against the ids its page must hold. */
async function pageRequest(url: string, key: string, project: TextProject, c: Case): Promise<() => PlannedRequest> {
  const expected = needleCalls(project.size).map(callId);
  const body = { project_id: project.projectId, filter: { text: NEEDLE }, limit: PAGE };
  let cursor: string | undefined;
  if (c.cursor) {
    const first = await call<{ next_cursor: string | null }>(url, 'POST', '/calls/query', key, body);
    if (!first.next_cursor) throw new Error(`the first page of ${project.projectId} names no next page`);
    cursor = first.next_cursor;
  }
  const ids = expected.slice(c.cursor ? PAGE : 0, (c.cursor ? 2 : 1) * PAGE);
  const request: PlannedRequest = {
    method: 'POST',
    path: '/calls/query',
    headers: { authorization: basicAuth(key), 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, ...(cursor ? { cursor } : {}) }),
    check: (text) => {
      const got = (JSON.parse(text) as { calls: { id: string }[] }).calls.map((found) => found.id);
      return got.join() === ids.join() ? null : `expected ${ids.length} calls ${ids[0]} … ${ids.at(-1)}, got ${got.length}: ${got[0]} … ${got.at(-1)}`;
    },
  };
  return () => request;
}

type Run = { backend: Backend; settings: Settings; problems: string[] };

/** Each case on each subject: a warm-up, then rounds alternating which subject goes first. */
async function measureSubjects(run: Run, subjects: readonly Subject[]): Promise<Row[]> {
  const { backend, settings, problems } = run;
  const seconds = Math.min(settings.seconds, MAX_SECONDS);
  const rows: Row[] = [];
  for (const c of CASES) {
    const requests = new Map<Subject, () => PlannedRequest>();
    for (const subject of subjects) requests.set(subject, await pageRequest(subject.url, subject.key, subject.project, c));
    const measureOne = async (subject: Subject, length: number) => {
      const m = await measureSequence({ url: subject.url, seconds: length, connections: CONNECTIONS, expectStatus: 200, next: requests.get(subject)! });
      for (const p of m.problems) problems.push(`${c.name}, ${subject.label} (${backend}): ${p}`);
      return m;
    };
    for (const subject of subjects) await measureOne(subject, settings.warmupSeconds); // warm-up, discarded
    const rounds = new Map<Subject, SequenceMeasurement[]>(subjects.map((s) => [s, []]));
    for (let round = 0; round < settings.rounds; round++) {
      const order = round % 2 === 0 ? subjects : [...subjects].reverse();
      for (const subject of order) rounds.get(subject)!.push(await measureOne(subject, seconds));
    }
    for (const [subject, ms] of rounds) {
      const med = (pick: (m: SequenceMeasurement) => number) => Math.round(median(ms.map(pick)) * 1000) / 1000;
      rows.push({
        database: backend,
        case: c.name,
        project: subject.label,
        p50_ms: med((m) => m.latency_ms.p50),
        p95_ms: med((m) => m.latency_ms.p95),
        p99_ms: med((m) => m.latency_ms.p99),
        rps: med((m) => m.rps),
        rounds: ms,
      });
    }
  }
  return rows;
}

/**
 * PostgreSQL plans with the statistics autovacuum gathers a minute or so after a bulk write; the
 * benchmark gathers them at once (ANALYZE) rather than measure whichever came first. SQLite
 * keeps no statistics unless told to, and the server does not, so nothing is run there.
 */
async function settle(backend: Backend, databaseUrl: string): Promise<void> {
  if (backend === 'postgresql') await withClient(databaseUrl, (client) => client.query('analyze calls'));
}

const ALONE = `${SMALL.toLocaleString('en')} calls, alone in its database`;
const BESIDE = `${SMALL.toLocaleString('en')} calls, beside ${LARGE.toLocaleString('en')}`;
const LARGE_LABEL = `${LARGE.toLocaleString('en')} calls`;

/** A new database of the backend with Loupe serving it; `stop` ends both. */
async function serveDatabase(backend: Backend, logFile: string): Promise<{ database: TestDatabase; loupe: Target; stop(): Promise<void> }> {
  const database = await freshDatabase(backend);
  const loupe = await startLoupe(database.url, logFile).catch(async (error) => {
    await database.drop();
    throw error;
  });
  return { database, loupe, stop: async () => { await loupe.stop(); await database.drop(); } };
}

async function measureDatabase(backend: Backend, settings: Settings, workDir: string, problems: string[]): Promise<{ rows: Row[]; projects: TextProject[] }> {
  const grown = await serveDatabase(backend, join(workDir, `loupe-call-text-${backend}.log`));
  const before = await serveDatabase(backend, join(workDir, `loupe-call-text-${backend}-small.log`)).catch(async (error) => {
    await grown.stop();
    throw error;
  });
  try {
    const key = await textOwner(grown.database.url);
    const keyBefore = await textOwner(before.database.url);
    const alone = await buildTextProject(before.loupe.url, keyBefore, SMALL);
    const small = await buildTextProject(grown.loupe.url, key, SMALL);
    const large = await buildTextProject(grown.loupe.url, key, LARGE);
    await settle(backend, before.database.url);
    await settle(backend, grown.database.url);
    const subjects: Subject[] = [
      { project: alone, label: ALONE, url: before.loupe.url, key: keyBefore },
      { project: large, label: LARGE_LABEL, url: grown.loupe.url, key },
      { project: small, label: BESIDE, url: grown.loupe.url, key },
    ];
    const rows = await measureSubjects({ backend, settings, problems }, subjects);
    return { rows, projects: [alone, large, small] };
  } finally {
    await before.stop();
    await grown.stop();
  }
}

/** p95 on the large project over p95 on the small one alone (the target) and beside it, per database and case. */
function growth(rows: readonly Row[]) {
  const out: { database: Backend; case: string; p95_growth: number; p95_over_beside: number }[] = [];
  for (const key of new Set(rows.map((r) => `${r.database}\u0000${r.case}`))) {
    const [database, name] = key.split('\u0000') as [Backend, string];
    const of = (label: string) => rows.find((r) => r.database === database && r.case === name && r.project === label)?.p95_ms ?? Number.NaN;
    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    out.push({ database, case: name, p95_growth: ratio(of(LARGE_LABEL), of(ALONE)), p95_over_beside: ratio(of(LARGE_LABEL), of(BESIDE)) });
  }
  return out;
}

export async function callTextBenchmark(settings: Settings, workDir: string): Promise<Section> {
  const { backends, notes } = benchBackends('call-text');
  const problems: string[] = [];
  const rows: Row[] = [];
  const fixtures: Record<string, TextProject[]> = {};
  for (const backend of backends) {
    const measured = await measureDatabase(backend, settings, workDir, problems);
    rows.push(...measured.rows);
    fixtures[backend] = measured.projects;
  }
  const growths = growth(rows);
  console.log(`\ncall-text: latency of POST /calls/query {filter: {text}} (1 call in ${NEEDLE_EVERY} holds the word), limit ${PAGE}, one request at a time`);
  console.table(rows.map(({ rounds, ...row }) => ({ ...row, 'rounds p95 ms': rounds.map((m) => m.latency_ms.p95).join(' ') })));
  console.table(growths.map((g) => ({ ...g, [`target ≤ ${MAX_GROWTH}`]: g.p95_growth <= MAX_GROWTH ? 'met' : 'MISSED' })));
  return {
    name: 'call-text',
    description:
      `POST /calls/query with filter.text of a word 1 call in ${NEEDLE_EVERY} holds, limit ${PAGE}, and the next page by cursor: a project of ` +
      `${SMALL} calls alone in its database, and one of ${LARGE} with one of ${SMALL} beside it in another (all written through calls/batch/create), ` +
      `measured in alternating rounds, ${CONNECTIONS} connection; ` +
      'the figures are in details (rows, p95_growth, fixtures), printed above',
    target: { metric: `p95 at ${SMALL} calls alone / p95 at ${LARGE} calls, per database and case (i.e. growth ≤ ${MAX_GROWTH}×)`, min: 1 / MAX_GROWTH },
    comparisons: [],
    details: { connections: CONNECTIONS, page: PAGE, sizes: [SMALL, LARGE], needle_every: NEEDLE_EVERY, notes, fixtures, p95_growth: growths, rows },
    problems,
    passed: problems.length === 0 && growths.length === backends.length * CASES.length && growths.every((g) => g.p95_growth <= MAX_GROWTH),
  };
}
