import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { createUserViaCli } from '../harness/child-server.ts';
import { freshDatabase, type Backend } from '../harness/databases.ts';
import { annotatorPool, type AnnotatorOptions, type AnnotatorPool } from './bench-annotators.ts';
import { startLoupe, startScript, type Target } from './child.ts';
import type { Owner } from './queue-fixture.ts';
import { withCpu } from './process-cpu.ts';
import { median, selfComparisonRounds, side, type Comparison, type Settings, type Side } from './report.ts';
import { measureSequence, type PlannedRequest, type SequenceMeasurement } from './sequence-load.ts';

// One write operation (progress, claim) measured on one database: Loupe (its own process) against
// the hand-written baseline (its own process, same database, its own queues), warm-up discarded,
// then BENCH_ROUNDS rounds in alternating order (at least SELF_COMPARISON_ROUNDS when the baseline
// is Loupe itself). The two never run at the same time. Before every run the workload makes sure
// the side has enough fresh targets for that run (set-up, unmeasured), sized from the side's
// fastest measured rate, so that every measured request is a real write.

export const ENTITY = 'bench';
export type SideName = 'loupe' | 'baseline';
/** How many more requests than the side's fastest rate so far a run is given targets for. */
const HEADROOM = 2.5;
/**
 * autocannon stops at the deadline with requests still queued in the server, which goes on
 * answering them: a pause lets them finish, so the next run (the other side) has the database
 * to itself.
 */
const DRAIN_MS = 1000;

export type WriteEnv = { backend: Backend; databaseUrl: string; loupe: Target; baseline: Target; owner: Owner; annotators: AnnotatorPool };

export type WriteWorkload = {
  /** One request on each side, compared with what Loupe itself reports for that item: same JSON. */
  probe(): Promise<void>;
  /** Fresh targets for up to `requests` requests of one side; the generator of that run. */
  plan(sideName: SideName, requests: number): Promise<() => PlannedRequest>;
  details(): Record<string, unknown>;
};

export type WriteBench = {
  name: string;
  /** The least req/s ratio Loupe/baseline per database, when not write-section.ts's WRITE_TARGET_RATIO. */
  targets?: Record<Backend, number>;
  /** Requests per second assumed for the warm-up run, before any rate was measured. */
  initialRate: number;
  /**
   * What the baseline side is: the hand-written server (default), or Loupe itself, when the
   * comparison is between two ways of calling Loupe (a session cookie against a key).
   */
  baseline?: 'hand-written' | 'loupe';
  /** How the annotators of the pool are made (a password to sign in with). */
  annotators?: () => Promise<AnnotatorOptions>;
  setUp(env: WriteEnv): Promise<WriteWorkload>;
};

/** A run, with the CPU the answering process spent per request (null where it cannot be read). */
type ServedMeasurement = SequenceMeasurement & { server_cpu_us_per_request: number | null };

export type WriteResult = { comparison: Comparison; problems: string[]; details: Record<string, unknown> };

/** Medians of an even number of rounds are means of two: keep them to the microsecond. */
function rounded(s: Side): Side {
  const us = (ms: number) => Math.round(ms * 1000) / 1000;
  return { ...s, p50_ms: us(s.p50_ms), p99_ms: us(s.p99_ms) };
}

/** Fails with both bodies when the baseline's item is not the one Loupe reports. */
export function expectSameItem(what: string, answered: unknown, reported: unknown): void {
  if (!isDeepStrictEqual(answered, reported)) {
    throw new Error(`${what}: the answer is not the item Loupe reports\n answered: ${JSON.stringify(answered)}\n reported: ${JSON.stringify(reported)}`);
  }
}

export async function runWriteComparison(bench: WriteBench, backend: Backend, settings: Settings, workDir: string): Promise<WriteResult> {
  const database = await freshDatabase(backend);
  const targets: Target[] = [];
  try {
    const loupe = await startLoupe(database.url, join(workDir, `loupe-${bench.name}-${backend}.log`));
    targets.push(loupe);
    const created = await createUserViaCli(database.url, { entity: ENTITY, role: 'member', username: 'bench-owner' });
    const owner: Owner = { url: loupe.url, key: created.api_key, projectId: `${ENTITY}/${bench.name}` };
    let baseline: Target = loupe;
    let baselinePid = loupe.server.child.pid;
    if (bench.baseline !== 'loupe') {
      const script = await startScript('baseline', new URL('./baseline-queue-writes.ts', import.meta.url), { DATABASE_URL: database.url });
      targets.push(script);
      baseline = script;
      baselinePid = script.child.pid;
    }
    const annotators = annotatorPool(database.url, ENTITY, (await bench.annotators?.()) ?? {});
    const workload = await bench.setUp({ backend, databaseUrl: database.url, loupe, baseline, owner, annotators });
    await workload.probe();

    const bySide: Record<SideName, Target> = { loupe, baseline };
    const pids: Record<SideName, number | undefined> = { loupe: loupe.server.child.pid, baseline: baselinePid };
    // The fastest rate seen so far (the guess until a run was measured): machines that share their
    // CPUs speed up and slow down, and a run must not outgrow its targets.
    const fastest: Record<SideName, number> = { loupe: 0, baseline: 0 };
    const problems: string[] = [];
    const run = async (name: SideName, seconds: number): Promise<ServedMeasurement> => {
      const rate = fastest[name] || bench.initialRate;
      const next = await workload.plan(name, Math.ceil(rate * seconds * HEADROOM) + 4 * settings.connections);
      const { result: measured, cpu_us_per_request } = await withCpu(
        pids[name],
        () => measureSequence({ url: bySide[name].url, seconds, connections: settings.connections, expectStatus: 200, next }),
        (m) => m.requests,
      );
      const m: ServedMeasurement = { ...measured, server_cpu_us_per_request: cpu_us_per_request };
      await sleep(DRAIN_MS);
      fastest[name] = Math.max(fastest[name], m.rps);
      for (const p of m.problems) problems.push(`${bench.name} (${backend}), ${name}: ${p}`);
      return m;
    };
    // Warm-up, discarded: JIT, connection pools, statement caches, the database's buffers.
    await run('loupe', settings.warmupSeconds);
    await run('baseline', settings.warmupSeconds);
    const rounds: Record<SideName, ServedMeasurement[]> = { loupe: [], baseline: [] };
    const roundCount = bench.baseline === 'loupe' ? selfComparisonRounds(settings) : settings.rounds;
    for (let round = 0; round < roundCount; round++) {
      const order: SideName[] = round % 2 === 0 ? ['loupe', 'baseline'] : ['baseline', 'loupe'];
      for (const name of order) rounds[name].push(await run(name, settings.seconds));
    }
    const l = rounded(side(rounds.loupe));
    const b = rounded(side(rounds.baseline));
    const cpu = (name: SideName) => {
      const values = rounds[name].map((m) => m.server_cpu_us_per_request);
      return values.every((v): v is number => v !== null) ? median(values) : null;
    };
    const serverCpu = { loupe: cpu('loupe'), baseline: cpu('baseline') };
    console.log(`${bench.name} (${backend}): CPU of the answering Node process per request (database server not included), median over rounds: Loupe ${serverCpu.loupe ?? '?'} µs, baseline ${serverCpu.baseline ?? '?'} µs`);
    return {
      comparison: { case: `${bench.name} (${backend})`, status: 200, loupe: l, baseline: b, ratio: l.rps / b.rps },
      problems,
      details: { ...workload.details(), server_cpu_us_per_request: serverCpu },
    };
  } finally {
    for (const target of targets.reverse()) await target.stop();
    await database.drop();
  }
}
