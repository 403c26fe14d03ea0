import autocannon from 'autocannon';
import type { Measurement } from './load.ts';

// An autocannon run in which every request is a different one (its own path, key and body, taken
// from a generator) and every answer is checked, not only its status: a write benchmark whose
// requests silently stop writing, or a claim benchmark that hands back the same item, measures
// nothing. Latencies are kept per request so that any percentile (p95 too) can be read exactly.

export type PlannedRequest = {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Why the answer is wrong, or null when it is right; the status is checked before this runs. */
  check?: (body: string) => string | null;
};

export type SequenceOptions = {
  url: string;
  seconds: number;
  connections: number;
  expectStatus: number;
  /** The next request to send; called once per request, by whichever connection sends it. */
  next: () => PlannedRequest;
};

export type SequenceMeasurement = Measurement & {
  latency_ms: Measurement['latency_ms'] & { p95: number };
  /** Answers with the expected status whose body failed the request's check. */
  rejected_bodies: number;
};

type CheckContext = { check?: PlannedRequest['check'] };
type StatusStats = { statusCodeStats?: Record<string, { count: number }>; resets?: number };

const SHOWN_BODY_PROBLEMS = 3;

export function percentile(sorted: readonly number[], p: number): number {
  if (!sorted.length) return 0;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;

export async function measureSequence(options: SequenceOptions): Promise<SequenceMeasurement> {
  const latencies: number[] = [];
  const bodyProblems: string[] = [];
  let rejected = 0;
  const instance = autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.seconds,
    timeout: 5,
    requests: [
      {
        setupRequest: (request, context) => {
          const planned = options.next();
          (context as CheckContext).check = planned.check;
          return {
            ...request,
            method: planned.method,
            path: planned.path,
            headers: planned.headers,
            ...(planned.body === undefined ? {} : { body: planned.body }),
          };
        },
        onResponse: (status, body, context) => {
          const check = (context as CheckContext).check;
          if (status !== options.expectStatus || !check) return;
          const problem = check(body);
          if (problem === null) return;
          rejected++;
          if (bodyProblems.length < SHOWN_BODY_PROBLEMS) bodyProblems.push(problem);
        },
      },
    ],
  }) as unknown as autocannon.Instance & Promise<autocannon.Result>;
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode === options.expectStatus) latencies.push(responseTime);
  });
  const result = await instance;

  const extra = result as unknown as StatusStats;
  const statuses = Object.fromEntries(Object.entries(extra.statusCodeStats ?? {}).map(([status, { count }]) => [status, count]));
  const problems: string[] = [];
  for (const [status, count] of Object.entries(statuses)) {
    if (Number(status) !== options.expectStatus) problems.push(`${count} responses with status ${status} (expected only ${options.expectStatus})`);
  }
  if (rejected) problems.push(`${rejected} answers failed their check, e.g. ${bodyProblems.join('; ')}`);
  if (result.errors) problems.push(`${result.errors} connection errors`);
  if (result.timeouts) problems.push(`${result.timeouts} timeouts`);
  if (extra.resets) problems.push(`${extra.resets} connection resets`);
  const requests = statuses[String(options.expectStatus)] ?? 0;
  if (requests === 0) problems.push('no successful responses at all');
  latencies.sort((a, b) => a - b);
  const mean = latencies.reduce((sum, value) => sum + value, 0) / (latencies.length || 1);
  return {
    requests,
    seconds: result.duration,
    rps: requests / result.duration,
    latency_ms: {
      p50: round3(percentile(latencies, 50)),
      p95: round3(percentile(latencies, 95)),
      p99: round3(percentile(latencies, 99)),
      mean: round3(mean),
    },
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    resets: extra.resets ?? 0,
    rejected_bodies: rejected,
    problems,
  };
}
