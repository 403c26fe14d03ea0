import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { createUserViaCli } from '../harness/child-server.ts';
import { freshDatabase, postgresAvailable, type Backend } from '../harness/databases.ts';
import { startLoupe } from './child.ts';
import { median, type Section, type Settings } from './report.ts';

// OpenTelemetry ingest (contract 5.9, issue 26 point 8): 100,000 GenAI spans exported as the SDK
// exports them — protobuf, 512 spans per request (its batch processor's default), gzip — against
// calls/batch/create of the same calls (what /explain shows each span becomes) in batches of 512,
// in the same run, 4 requests in flight on each side. Stored calls per second, and the server's
// peak resident memory. Each round sends new spans (new ids) to both sides.

const SPANS = Number(process.env.BENCH_OTLP_SPANS ?? 100_000);
const EXPORT_SIZE = 512;
const CONCURRENCY = 4;
const TARGET_RATIO = 0.8;
const OTLP_PROJECT = 'bench/otlp';
const BATCH_PROJECT = 'bench/batch';

const SYSTEM = JSON.stringify([{ type: 'text', content: 'You are a support agent for an online shop. Answer briefly and cite the policy you rely on.' }]);

/** Traces of an agent: a root span, two LLM calls with GenAI messages and usage, a tool call (4 spans each). */
function agentSpans(count: number, round: number): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'shop-agent', 'service.version': '2.4.1', 'deployment.environment.name': 'production' }),
    spanProcessors: [new SimpleSpanProcessor({ exporter: memory })],
  });
  const tracer = provider.getTracer('shop-agent', '2.4.1');
  for (let t = 0; t < count / 4; t++) {
    const root = tracer.startSpan('invoke_agent support', { attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'support', 'session.id': `s-${round}-${t % 500}` } });
    const inRoot = trace.setSpan(context.active(), root);
    for (const step of [0, 1]) {
      const llm = tracer.startSpan('chat gpt-4o-mini', { kind: SpanKind.CLIENT }, inRoot);
      const question = `Order #${round}-${t}: my parcel has not arrived after ${t % 14} days, what can I do?`;
      llm.setAttributes({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
        'gen_ai.request.temperature': 0.2,
        'gen_ai.response.id': `chatcmpl-${round}-${t}-${step}`,
        'gen_ai.response.finish_reasons': [step === 0 ? 'tool_calls' : 'stop'],
        'gen_ai.system_instructions': SYSTEM,
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: question }] }]),
        'gen_ai.output.messages': JSON.stringify([
          step === 0
            ? { role: 'assistant', parts: [{ type: 'tool_call', id: `call_${t}`, name: 'track_parcel', arguments: { order: `${round}-${t}` } }], finish_reason: 'tool_call' }
            : { role: 'assistant', parts: [{ type: 'text', content: 'Your parcel is delayed at the depot; it will arrive within 2 days. Policy 4.2 lets you ask for a refund after 21 days.' }], finish_reason: 'stop' },
        ]),
        'gen_ai.usage.input_tokens': 180 + (t % 50),
        'gen_ai.usage.output_tokens': 20 + (t % 30),
      });
      llm.end();
      if (step === 0) {
        const tool = tracer.startSpan('execute_tool track_parcel', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'track_parcel', 'gen_ai.tool.call.id': `call_${t}` } }, inRoot);
        tool.end();
      }
    }
    root.end();
  }
  return memory.getFinishedSpans();
}

function peakRssMb(pid: number): number {
  const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return +(kb / 1024).toFixed(1);
}

/** Sends every body with `concurrency` in flight; the seconds it took. */
async function drive(count: number, send: (index: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < count) await send(next++);
  }));
  return (performance.now() - started) / 1000;
}

async function benchBackend(backend: Backend, settings: Settings, workDir: string) {
  const database = await freshDatabase(backend);
  const loupe = await startLoupe(database.url, join(workDir, `loupe-otlp-${backend}.log`));
  const problems: string[] = [];
  try {
    const user = await createUserViaCli(database.url, { entity: 'bench', role: 'member', username: `otlp-${backend}` });
    const authorization = `Basic ${Buffer.from(`api:${user.api_key}`).toString('base64')}`;
    const otlpHeaders = { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip', authorization, 'x-loupe-project': OTLP_PROJECT };

    /** One round's bodies: the gzipped exports, and the same calls (for the batch project) as calls/batch/create bodies. */
    const prepare = async (round: number, count: number) => {
      const spans = agentSpans(count, round);
      const exports: Buffer[] = [];
      const batches: string[] = [];
      for (let i = 0; i < spans.length; i += EXPORT_SIZE) {
        const body = gzipSync(ProtobufTraceSerializer.serializeRequest(spans.slice(i, i + EXPORT_SIZE))!);
        exports.push(body);
        const explained = await fetch(`${loupe.url}/otel/v1/traces/explain`, { method: 'POST', headers: { ...otlpHeaders, 'x-loupe-project': BATCH_PROJECT }, body: new Uint8Array(body) });
        if (explained.status !== 200) throw new Error(`/explain answered ${explained.status}: ${(await explained.text()).slice(0, 300)}`);
        const { calls, rejected } = (await explained.json()) as { calls: { call: unknown }[]; rejected: unknown[] };
        if (rejected.length) throw new Error(`/explain refused ${rejected.length} spans: ${JSON.stringify(rejected[0])}`);
        batches.push(JSON.stringify({ batch: calls.map(({ call }) => call) }));
      }
      return { spans: spans.length, exports, batches };
    };
    const sendOtlp = async (body: Buffer, expected: number) => {
      const reply = await fetch(`${loupe.url}/otel/v1/traces`, { method: 'POST', headers: otlpHeaders, body: new Uint8Array(body) });
      const bytes = Buffer.from(await reply.arrayBuffer());
      if (reply.status !== 200) throw new Error(`OTLP answered ${reply.status}: ${bytes.toString().slice(0, 300)}`);
      const response = ProtobufTraceSerializer.deserializeResponse(bytes);
      if (response.partialSuccess) throw new Error(`OTLP refused spans: ${JSON.stringify(response.partialSuccess)}`);
      if (reply.headers.get('loupe-new-records') !== String(expected)) throw new Error(`OTLP stored ${reply.headers.get('loupe-new-records')} of ${expected}`);
    };
    const sendBatch = async (body: string, expected: number) => {
      const reply = await fetch(`${loupe.url}/calls/batch/create`, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body });
      const text = await reply.text();
      if (reply.status !== 200) throw new Error(`calls/batch/create answered ${reply.status}: ${text.slice(0, 300)}`);
      if (reply.headers.get('loupe-new-records') !== String(expected)) throw new Error(`calls/batch/create stored ${reply.headers.get('loupe-new-records')} of ${expected}`);
    };
    const sizeOf = (index: number, total: number) => Math.min(EXPORT_SIZE, total - index * EXPORT_SIZE);

    // Warm-up, discarded: a small round on each side.
    const warm = await prepare(-1, 20 * EXPORT_SIZE);
    await drive(warm.exports.length, (i) => sendOtlp(warm.exports[i]!, sizeOf(i, warm.spans)));
    await drive(warm.batches.length, (i) => sendBatch(warm.batches[i]!, sizeOf(i, warm.spans)));

    const otlpRates: number[] = [];
    const batchRates: number[] = [];
    const bytes = { otlp_gzip: 0, batch_json: 0 };
    for (let round = 0; round < settings.rounds; round++) {
      const { spans, exports, batches } = await prepare(round, SPANS);
      bytes.otlp_gzip = exports.reduce((n, b) => n + b.length, 0);
      bytes.batch_json = batches.reduce((n, b) => n + Buffer.byteLength(b), 0);
      const otlp = async () => otlpRates.push(spans / (await drive(exports.length, (i) => sendOtlp(exports[i]!, sizeOf(i, spans)))));
      const batch = async () => batchRates.push(spans / (await drive(batches.length, (i) => sendBatch(batches[i]!, sizeOf(i, spans)))));
      if (round % 2 === 0) {
        await otlp();
        await batch();
      } else {
        await batch();
        await otlp();
      }
    }
    const o = median(otlpRates);
    const b = median(batchRates);
    return {
      comparison: {
        case: backend,
        spans_per_round: SPANS,
        otlp_calls_per_s: Math.round(o),
        batch_calls_per_s: Math.round(b),
        ratio: +(o / b).toFixed(3),
        peak_rss_mb: peakRssMb(loupe.server.child.pid!),
        mb_per_round: { otlp_gzip: +(bytes.otlp_gzip / 1048576).toFixed(1), batch_json: +(bytes.batch_json / 1048576).toFixed(1) },
        rounds: { otlp: otlpRates.map(Math.round), batch: batchRates.map(Math.round) },
      },
      problems,
    };
  } finally {
    await loupe.stop();
    await database.drop();
  }
}

export async function otlpIngestBenchmark(settings: Settings, workDir: string): Promise<Section> {
  const backends: Backend[] = postgresAvailable ? ['sqlite', 'postgresql'] : ['sqlite'];
  if (!postgresAvailable) console.log('NOTICE: TEST_DATABASE_URL is unset: the PostgreSQL half of otlp-ingest is skipped.');
  const results: Awaited<ReturnType<typeof benchBackend>>[] = [];
  for (const backend of backends) results.push(await benchBackend(backend, settings, workDir));
  const comparisons = results.map((r) => r.comparison);
  console.log(`\notlp-ingest: stored calls/s, ${SPANS.toLocaleString('en')} GenAI spans per round as OTLP protobuf exports of ${EXPORT_SIZE} (gzip) vs calls/batch/create of the same calls, ${CONCURRENCY} requests in flight`);
  console.table(comparisons.map(({ rounds: _rounds, mb_per_round: _mb, ...row }) => row));
  const checks = comparisons.map((c) => ({ what: `${c.case} OTLP/batch ratio ${c.ratio} ≥ ${TARGET_RATIO}`, ok: c.ratio >= TARGET_RATIO }));
  for (const check of checks) console.log(`${check.ok ? 'PASS' : 'FAIL'}: ${check.what}`);
  return {
    name: 'otlp-ingest',
    description: `OTLP protobuf ingest of ${SPANS} GenAI spans in exports of ${EXPORT_SIZE} (gzip) vs calls/batch/create of the same calls; peak RSS`,
    target: { metric: 'stored calls/s, OTLP over calls/batch/create', min: TARGET_RATIO },
    comparisons: [],
    details: { comparisons, checks, concurrency: CONCURRENCY, export_size: EXPORT_SIZE },
    problems: results.flatMap((r) => r.problems),
    passed: checks.every((c) => c.ok),
  };
}
