import autocannon from 'autocannon';

// One autocannon run against one target, reduced to the figures the reports use, with every
// response status accounted for: a benchmark that counts error answers as throughput lies.

export type LoadOptions = { url: string; headers?: Record<string, string>; seconds: number; connections: number; expectStatus: number };

export type Measurement = {
  requests: number;
  seconds: number;
  rps: number;
  latency_ms: { p50: number; p99: number; mean: number };
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  resets: number;
  /** Why the run does not count, when it does not. */
  problems: string[];
};

type StatusStats = { statusCodeStats?: Record<string, { count: number }>; resets?: number };

export async function measure(options: LoadOptions): Promise<Measurement> {
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.seconds,
    headers: options.headers ?? {},
    // autocannon's default 10 s timeout would hide stalls inside the run; fail them loudly instead.
    timeout: 5,
  });
  const extra = result as unknown as StatusStats;
  const statuses = Object.fromEntries(Object.entries(extra.statusCodeStats ?? {}).map(([status, { count }]) => [status, count]));
  const problems: string[] = [];
  for (const [status, count] of Object.entries(statuses)) {
    if (Number(status) !== options.expectStatus) problems.push(`${count} responses with status ${status} (expected only ${options.expectStatus})`);
  }
  if (result.errors) problems.push(`${result.errors} connection errors`);
  if (result.timeouts) problems.push(`${result.timeouts} timeouts`);
  if (extra.resets) problems.push(`${extra.resets} connection resets`);
  const requests = statuses[String(options.expectStatus)] ?? 0;
  if (requests === 0) problems.push('no successful responses at all');
  return {
    requests,
    seconds: result.duration,
    rps: requests / result.duration,
    latency_ms: { p50: result.latency.p50, p99: result.latency.p99, mean: result.latency.average },
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    resets: extra.resets ?? 0,
    problems,
  };
}
