import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createUserViaCli } from '../harness/child-server.ts';
import { freshDatabase, postgresAvailable, type Backend } from '../harness/databases.ts';
import { LATER_PROJECT } from './bench-rest.ts';
import { startLoupe, startScript } from './child.ts';
import { cpuSeconds } from './process-cpu.ts';
import { median, selfComparisonRounds, type Section, type Settings } from './report.ts';

// Webhooks (contract 5.13) under load, on each database:
// 1. The cost of the outbox on the write: feedback batches of 1,000 to a project with two webhooks
//    subscribed to feedback.created, against a project with none, alternating rounds in the same
//    run (records/s; target ratio ≥ 0.9; SELF_COMPARISON_ROUNDS rounds at least). The delivery
//    worker runs meanwhile, as in production.
// 2. Delivery to a local receiver, single-record feedback writes to the project with two webhooks
//    (each write one event to each): the capacity, events per second received end to end while 8
//    clients write a burst as fast as they can; then a load sustained at half that capacity, paced
//    evenly, and the delay from each event's commit (its `timestamp`, taken in the writing
//    transaction) to its receipt: p95 target ≤ 1 s.

const TARGET_RATIO = 0.9;
const TARGET_P95_MS = 1000;
const LOUPE_CONCURRENCY = 4;
const DELIVERY_WRITERS = 8;


function element(project: string, n: number) {
  return { project_id: project, svc_ref: `svc:///${project}/call/call-${n % 5000}`, feedback_type: 'thumbs', payload: { value: n % 5, reason: 'tone', tags: ['support', 'en'] } };
}

/** The receiver (webhook-receiver.ts), in its own process. */
async function startReceiver() {
  const target = await startScript('receiver', new URL('./webhook-receiver.ts', import.meta.url), {});
  /** Deliveries received, delays noted, and the delays from the `from`-th on. */
  const stats = async (from = Number.MAX_SAFE_INTEGER) =>
    (await (await fetch(`${target.url}/stats?from=${from}`)).json()) as { received: number; noted: number; delays: number[] };
  return {
    url: target.url,
    stats,
    received: async () => (await stats()).received,
    close: () => target.stop(),
  };
}

async function drive(batches: number, concurrency: number, send: () => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < batches) await send();
  }));
  return (performance.now() - started) / 1000;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function benchBackend(backend: Backend, settings: Settings, workDir: string) {
  const database = await freshDatabase(backend);
  const receiver = await startReceiver();
  const loupe = await startLoupe(database.url, join(workDir, `loupe-webhooks-${backend}.log`), {
    LOUPE_WEBHOOK_ALLOW_HTTP: 'true',
    LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  const problems: string[] = [];
  try {
    const user = await createUserViaCli(database.url, { entity: 'bench', role: 'member', username: `hooks-${backend}` });
    const headers = { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`api:${user.api_key}`).toString('base64')}` };
    const plain = 'bench/plain';
    const hooked = 'bench/hooked';
    for (const path of ['/a', '/b']) {
      const reply = await fetch(`${loupe.url}/webhooks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ project_id: hooked, url: `${receiver.url}${path}`, events: ['feedback.created'] }),
      });
      if (reply.status !== 200) throw new Error(`creating a webhook answered ${reply.status}: ${await reply.text()}`);
    }
    let counter = 0;
    const post = async (project: string, size: number) => {
      const body = JSON.stringify({ batch: Array.from({ length: size }, () => element(project, counter++)) });
      const reply = await fetch(`${loupe.url}/feedback/batch/create`, { method: 'POST', headers, body });
      const text = await reply.text();
      if (reply.status !== 200) throw new Error(`Loupe answered ${reply.status}: ${text.slice(0, 300)}`);
    };
    await post(plain, 1);
    await post(hooked, 1);
    await post(LATER_PROJECT, 100); // neither measured project holds the greatest id

    // 1. Batches of 1,000, with two webhooks against none.
    const batches = Math.max(20, Math.round((settings.seconds * 30_000) / 1000 / 2));
    // Each round also notes the server's CPU per batch (its deliveries included, as they are sent meanwhile).
    const pid = loupe.server.child.pid;
    const cpu: Record<string, number[]> = { [plain]: [], [hooked]: [] };
    const measure = async (project: string) => {
      const before = cpuSeconds(pid);
      const rate = (batches * 1000) / (await drive(batches, LOUPE_CONCURRENCY, () => post(project, 1000)));
      const after = cpuSeconds(pid);
      if (before !== null && after !== null) cpu[project]!.push(((after - before) * 1000) / batches);
      return rate;
    };
    await measure(plain); // warm-up, discarded
    await measure(hooked);
    cpu[plain] = [];
    cpu[hooked] = [];
    const plainRates: number[] = [];
    const hookedRates: number[] = [];
    const rounds = selfComparisonRounds(settings);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [plain, hooked] : [hooked, plain];
      for (const project of order) (project === plain ? plainRates : hookedRates).push(await measure(project));
    }
    const ratio = median(hookedRates) / median(plainRates);
    const cpuPerBatch = (project: string) => (cpu[project]!.length ? +median(cpu[project]!).toFixed(1) : null);

    // 2. Delivery under load: let the batches' deliveries drain first, then write single records.
    // Two deliveries per event: the first write, the warm-up and every round's batches to the project with webhooks.
    const batchDeliveries = 2 * (1 + batches * (1 + rounds));
    await waitFor(async () => (await receiver.received()) >= batchDeliveries, 60_000).catch(async () =>
      problems.push(`the batches' deliveries did not drain within 60 s (${await receiver.received()} of ${batchDeliveries})`),
    );
    // 2a. Capacity: a burst of single-record writes from 8 clients, timed until the receiver has
    // every delivery of it.
    const burst = Math.max(200, settings.seconds * 60);
    let count = await receiver.received();
    let started = performance.now();
    const burstWriteSeconds = await drive(burst, DELIVERY_WRITERS, () => post(hooked, 1));
    if (!(await waitFor(async () => (await receiver.received()) >= count + 2 * burst, 120_000).then(() => true, () => false))) {
      problems.push(`the burst's deliveries did not drain within 120 s (${(await receiver.received()) - count} of ${2 * burst})`);
    }
    const burstSeconds = (performance.now() - started) / 1000;
    const capacity = (2 * burst) / burstSeconds;

    // 2b. A sustained load at half that capacity: writes paced evenly over the run, each delay from
    // the event's commit to its receipt noted.
    const pace = Math.max(1, Math.round(capacity / 2 / 2));
    const before = await receiver.stats();
    count = before.received;
    started = performance.now();
    const total = pace * settings.seconds;
    const pending: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / pace;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      pending.push(post(hooked, 1));
    }
    await Promise.all(pending);
    const writeSeconds = (performance.now() - started) / 1000;
    if (!(await waitFor(async () => (await receiver.received()) >= count + 2 * total, 60_000).then(() => true, () => false))) {
      problems.push(`the paced run's deliveries did not drain within 60 s (${(await receiver.received()) - count} of ${2 * total})`);
    }
    const runSeconds = (performance.now() - started) / 1000;
    const after = await receiver.stats(before.noted);
    const delays = after.delays;
    const delivery = {
      burst_writes: burst,
      burst_writes_per_s: Math.round(burst / burstWriteSeconds),
      capacity_events_per_s: Math.round(capacity),
      paced_writes_per_s: pace,
      paced_events_per_s: Math.round((after.received - count) / runSeconds),
      paced_drain_after_writes_s: +(runSeconds - writeSeconds).toFixed(2),
      delay_ms: { p50: percentile(delays, 50), p95: percentile(delays, 95), p99: percentile(delays, 99), max: percentile(delays, 100) },
    };
    return {
      ratio: {
        case: `${backend} batch 1000`,
        batches_per_round: batches,
        none_records_per_s: Math.round(median(plainRates)),
        two_webhooks_records_per_s: Math.round(median(hookedRates)),
        ratio: +ratio.toFixed(3),
        server_cpu_ms_per_batch: { none: cpuPerBatch(plain), two_webhooks: cpuPerBatch(hooked) },
        rounds: { none: plainRates.map(Math.round), two_webhooks: hookedRates.map(Math.round) },
      },
      delivery: { backend, ...delivery },
      problems,
    };
  } finally {
    await loupe.stop();
    await receiver.close();
    await database.drop();
  }
}

async function waitFor(done: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error('timed out');
    await sleep(20);
  }
}

export async function webhooksBenchmark(settings: Settings, workDir: string): Promise<Section> {
  const backends: Backend[] = postgresAvailable ? ['sqlite', 'postgresql'] : ['sqlite'];
  if (!postgresAvailable) console.log('NOTICE: TEST_DATABASE_URL is unset: the PostgreSQL half of webhooks is skipped.');
  const results: Awaited<ReturnType<typeof benchBackend>>[] = [];
  for (const backend of backends) results.push(await benchBackend(backend, settings, workDir));
  const ratios = results.map((r) => r.ratio);
  const deliveries = results.map((r) => r.delivery);
  console.log('\nwebhooks: feedback batches of 1,000, records/s, two webhooks subscribed vs none (same run)');
  console.table(ratios.map(({ rounds: _rounds, server_cpu_ms_per_batch: cpu, ...row }) => ({ ...row, 'server CPU ms/batch none / two': `${cpu.none} / ${cpu.two_webhooks}` })));
  console.log(`delivery to a local receiver, one record per write, two webhooks: capacity (a burst from ${DELIVERY_WRITERS} clients), then half of it sustained`);
  console.table(deliveries.map(({ delay_ms, ...row }) => ({ ...row, 'delay p50/p95/p99/max ms': `${delay_ms.p50} / ${delay_ms.p95} / ${delay_ms.p99} / ${delay_ms.max}` })));
  const checks = [
    ...ratios.map((r) => ({ what: `${r.case} ratio ${r.ratio} ≥ ${TARGET_RATIO}`, ok: r.ratio >= TARGET_RATIO })),
    ...deliveries.map((d) => ({ what: `${d.backend} commit→receipt p95 ${d.delay_ms.p95} ms ≤ ${TARGET_P95_MS}`, ok: d.delay_ms.p95 <= TARGET_P95_MS })),
  ];
  for (const check of checks) console.log(`${check.ok ? 'PASS' : 'FAIL'}: ${check.what}`);
  return {
    name: 'webhooks',
    description: 'feedback batch 1,000 with two webhooks vs none; delivery events/s and commit→receipt delay to a local receiver',
    target: { metric: 'records/s ratio at batch 1,000 with two webhooks (and p95 delay ≤ 1 s)', min: TARGET_RATIO },
    comparisons: [],
    details: { ratios, deliveries, checks, loupe_concurrency: LOUPE_CONCURRENCY, delivery_writers: DELIVERY_WRITERS },
    problems: results.flatMap((r) => r.problems),
    passed: checks.every((c) => c.ok),
  };
}
