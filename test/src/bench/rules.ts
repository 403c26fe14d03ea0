import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createUserViaCli } from '../harness/child-server.ts';
import { freshDatabase, postgresAvailable, type Backend } from '../harness/databases.ts';
import { LATER_PROJECT } from './bench-rest.ts';
import { startLoupe } from './child.ts';
import { median, selfComparisonRounds, type Section, type Settings } from './report.ts';

// Queue rules (contract 5.10) at work: calls/batch/create at batch 1,000 into a project whose
// queues have 5 enabled rules (mixed filters, one sampling a tenth) against the same into a
// project without rules, in alternating rounds of the same run (SELF_COMPARISON_ROUNDS at
// least); the rate a backfill considers stored calls; and a preview with 20 attribute conditions
// over a project of 1,000,000 calls (BENCH_RULES_PREVIEW_CALLS), answered within the scan limit.

const TARGET_RATIO = 0.85;
const PREVIEW_TARGET_MS = 2_000;
const BATCH = 1000;
const CONCURRENCY = 4;
const BACKFILL_CALLS = 100_000;

type Api = { url: string; headers: Record<string, string> };

async function post(api: Api, path: string, body: unknown): Promise<any> {
  const reply = await fetch(`${api.url}${path}`, { method: 'POST', headers: api.headers, body: JSON.stringify(body) });
  const text = await reply.text();
  if (reply.status !== 200) throw new Error(`${path} answered ${reply.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

let sequence = 0;
/** A call as instrumented apps send them: chat and tool calls, a model, some errors, some text. */
function call(projectId: string, startedAt: number) {
  const n = sequence++;
  return {
    project_id: projectId,
    id: `b${n}`,
    op_name: n % 4 === 0 ? 'tool.search' : 'openai.chat',
    started_at: new Date(startedAt + n).toISOString(),
    ...(n % 50 === 0 ? { exception: 'Timeout after 30 s' } : {}),
    inputs: { messages: [{ role: 'user', content: `Where is order ${n}? It was due on Monday, the customer says.` }] },
    output: { role: 'assistant', content: n % 25 === 1 ? 'I cannot find that order.' : `Order ${n} ships tomorrow.` },
    attributes: { gen_ai: { request: { model: n % 3 ? 'gpt-4o' : 'gpt-4o-mini' }, usage: { input_tokens: 100 + (n % 900), output_tokens: 20 + (n % 200) } }, tier: n % 5 ? 'free' : 'pro' },
  };
}

/**
 * Five rules with mixed filters, each as selective as a review rule tends to be: op names and an
 * attribute, two attributes, full text, exceptions, and a tenth of everything. Together they add
 * about 25 items per 100 calls.
 */
const RULES = [
  { name: 'mini tool calls', filter: { op_names: ['tool.search'], attributes: [{ path: 'gen_ai.request.model', op: 'eq', value: 'gpt-4o-mini' }] } },
  { name: 'long pro answers', filter: { attributes: [{ path: 'gen_ai.usage.output_tokens', op: 'gte', value: 200 }, { path: 'tier', op: 'eq', value: 'pro' }] } },
  { name: 'cannot find', filter: { op_names: ['openai.chat'], text: 'cannot find' } },
  { name: 'errors', filter: { has_exception: true } },
  { name: 'a tenth', filter: {}, sample_rate: 0.1 },
];

async function drive(batches: number, send: () => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < batches) await send();
    }),
  );
  return (performance.now() - started) / 1000;
}

async function waitForBackfill(api: Api, projectId: string, queueId: string, ruleId: string): Promise<{ considered: number; added: number }> {
  for (;;) {
    const { rules } = await post(api, `/annotation_queues/${queueId}/rules/query`, { project_id: projectId });
    const rule = rules.find((r: { id: string }) => r.id === ruleId);
    if (rule.backfill.state !== 'running') return rule.backfill;
    await sleep(100);
  }
}

async function benchBackend(backend: Backend, settings: Settings, workDir: string) {
  const database = await freshDatabase(backend);
  const loupe = await startLoupe(database.url, join(workDir, `loupe-rules-${backend}.log`));
  try {
    const user = await createUserViaCli(database.url, { entity: 'bench', role: 'member', username: `rules-${backend}` });
    const api: Api = { url: loupe.url, headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`api:${user.api_key}`).toString('base64')}` } };
    const plain = 'bench/no-rules';
    const ruled = 'bench/rules';
    for (const rule of RULES) {
      const { id: queueId } = await post(api, '/annotation_queues', { project_id: ruled, name: rule.name });
      await post(api, `/annotation_queues/${queueId}/rules`, { project_id: ruled, trigger: 'call', ...rule });
    }
    await post(api, '/annotation_queues', { project_id: plain, name: 'no rules' });
    const base = Date.UTC(2026, 0, 1);
    const send = (projectId: string) => async () => {
      await post(api, '/calls/batch/create', { batch: Array.from({ length: BATCH }, () => call(projectId, base)) });
    };
    const rate = async (projectId: string, batches: number) => (batches * BATCH) / (await drive(batches, send(projectId)));
    await send(LATER_PROJECT)(); // neither measured project holds the greatest id
    // Warm-up, discarded; its rate sizes the rounds: BENCH_SECONDS of work each, at least 10 batches.
    const warmupBatches = Math.max(10, Math.round((settings.warmupSeconds * 8_000) / BATCH));
    const warm = Math.min(await rate(plain, warmupBatches), await rate(ruled, warmupBatches));
    const batches = Math.max(10, Math.round((warm * settings.seconds) / BATCH));
    const without: number[] = [];
    const withRules: number[] = [];
    for (let round = 0; round < selfComparisonRounds(settings); round++) {
      if (round % 2 === 0) {
        without.push(await rate(plain, batches));
        withRules.push(await rate(ruled, batches));
      } else {
        withRules.push(await rate(ruled, batches));
        without.push(await rate(plain, batches));
      }
    }
    const comparison = {
      case: `${backend} calls/batch/create batch ${BATCH}, 5 rules vs none`,
      with_rules_calls_per_s: Math.round(median(withRules)),
      no_rules_calls_per_s: Math.round(median(without)),
      ratio: +(median(withRules) / median(without)).toFixed(3),
      rounds: { with_rules: withRules.map(Math.round), no_rules: without.map(Math.round) },
    };

    // Backfill: a rule over BACKFILL_CALLS stored calls of a project of their own.
    const backfillProject = 'bench/backfill';
    await drive(BACKFILL_CALLS / BATCH, send(backfillProject));
    const { id: backfillQueue } = await post(api, '/annotation_queues', { project_id: backfillProject, name: 'backfill' });
    const started = performance.now();
    const { rule } = await post(api, `/annotation_queues/${backfillQueue}/rules`, {
      project_id: backfillProject, name: 'backfill', trigger: 'call', filter: RULES[0]!.filter, backfill_since: new Date(base).toISOString(),
    });
    const done = await waitForBackfill(api, backfillProject, backfillQueue, rule.id);
    const seconds = (performance.now() - started) / 1000;
    const backfill = { considered: done.considered, added: done.added, seconds: +seconds.toFixed(2), calls_per_s: Math.round(done.considered / seconds) };

    // Preview: 20 attribute conditions over a project of BENCH_RULES_PREVIEW_CALLS calls.
    const previewCalls = Number(process.env.BENCH_RULES_PREVIEW_CALLS ?? 1_000_000);
    const previewProject = 'bench/preview';
    await drive(previewCalls / BATCH, send(previewProject));
    const { id: previewQueue } = await post(api, '/annotation_queues', { project_id: previewProject, name: 'preview' });
    const conditions = Array.from({ length: 20 }, (_, i) =>
      i % 2 ? { path: 'gen_ai.usage.input_tokens', op: 'gte', value: i } : { path: 'gen_ai.request.model', op: 'contains', value: 'gpt' },
    );
    const timings: number[] = [];
    let answer: Record<string, unknown> = {};
    for (let round = 0; round < Math.max(3, settings.rounds); round++) {
      const at = performance.now();
      answer = await post(api, `/annotation_queues/${previewQueue}/rules/preview`, { project_id: previewProject, trigger: 'call', filter: { attributes: conditions } });
      timings.push(performance.now() - at);
    }
    const preview = { project_calls: previewCalls, conditions: 20, answer, ms: timings.map(Math.round), median_ms: Math.round(median(timings)) };
    return { comparison, backfill, preview, problems: [] as string[] };
  } finally {
    await loupe.stop();
    await database.drop();
  }
}

export async function rulesBenchmark(settings: Settings, workDir: string): Promise<Section> {
  const backends: Backend[] = postgresAvailable ? ['sqlite', 'postgresql'] : ['sqlite'];
  if (!postgresAvailable) console.log('NOTICE: TEST_DATABASE_URL is unset: the PostgreSQL half of rules is skipped.');
  const results: Awaited<ReturnType<typeof benchBackend>>[] = [];
  for (const backend of backends) results.push(await benchBackend(backend, settings, workDir));
  console.log('\nrules: calls/batch/create stored calls/s with 5 enabled rules vs none (same run, 4 requests in flight)');
  console.table(results.map(({ comparison: { rounds: _rounds, ...row } }) => row));
  console.log('backfill and preview:');
  console.table(
    results.map((r, i) => ({
      backend: backends[i],
      'backfill calls considered/s': r.backfill.calls_per_s,
      'backfill considered': r.backfill.considered,
      'preview project calls': r.preview.project_calls,
      'preview median ms': r.preview.median_ms,
      'preview scanned': (r.preview.answer as { scanned_calls?: number }).scanned_calls,
      'scan limit reached': (r.preview.answer as { scan_limit_reached?: boolean }).scan_limit_reached,
    })),
  );
  const checks = results.flatMap((r, i) => [
    { what: `${r.comparison.case}: ratio ${r.comparison.ratio} ≥ ${TARGET_RATIO}`, ok: r.comparison.ratio >= TARGET_RATIO },
    { what: `${backends[i]} preview of 20 conditions over ${r.preview.project_calls} calls: ${r.preview.median_ms} ms < ${PREVIEW_TARGET_MS}`, ok: r.preview.median_ms < PREVIEW_TARGET_MS },
  ]);
  for (const check of checks) console.log(`${check.ok ? 'PASS' : 'FAIL'}: ${check.what}`);
  return {
    name: 'rules',
    description: 'calls/batch/create at batch 1,000 with 5 enabled rules vs none; backfill calls considered/s; preview of 20 conditions over 1M calls',
    target: { metric: 'calls/s ratio with rules / without at batch 1,000 (and preview < 2 s)', min: TARGET_RATIO },
    comparisons: [],
    details: { results: Object.fromEntries(backends.map((b, i) => [b, results[i]])), checks, concurrency: CONCURRENCY },
    problems: results.flatMap((r) => r.problems),
    passed: checks.every((c) => c.ok),
  };
}
