import { hashPassword } from '@loupe/server';
import type { Annotator } from './bench-annotators.ts';
import { byKey, progressWorkload } from './progress-writes.ts';
import type { Section, Settings } from './report.ts';
import type { WriteBench, WriteEnv } from './write-comparison.ts';
import { writeSection } from './write-section.ts';

// Issue "People", point 5: the progress update of progress-writes.ts sent by people signed in with
// a password (the loupe_session cookie, and the page's Origin as a browser sends on a write)
// against the same update sent with API keys, both to one Loupe process, same run. The session
// lookup is one SHA-256 and one indexed read, as a key's is: the target is 0.95. Set-up signs every
// annotator in through POST /auth/sign-in and reports that route's latency (one argon2id
// verification each, at the library's recommended parameters).

const PASSWORD = 'a benchmark passphrase of some length';
/** Sign-ins measured one after another, for the latency of the route alone. */
const SIGN_INS = 40;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function signIn(url: string, annotator: Annotator): Promise<{ cookie: string; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${url}/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ username: annotator.username, password: PASSWORD }),
  });
  const ms = performance.now() - started;
  const text = await response.text();
  const cookie = response.headers.get('set-cookie')?.match(/loupe_session=[^;]*/)?.[0];
  if (response.status !== 200 || !cookie) throw new Error(`sign-in of ${annotator.username} answered ${response.status}: ${text.slice(0, 300)}`);
  return { cookie, ms };
}

async function setUp(env: WriteEnv) {
  const url = env.loupe.url;
  const cookies = new Map<string, string>();
  const signInMs: number[] = [];
  await env.annotators.ensure(1);
  for (let n = 0; n < SIGN_INS; n++) signInMs.push((await signIn(url, env.annotators.list[0]!)).ms);
  signInMs.sort((a, b) => a - b);
  const workload = await progressWorkload(
    env,
    (side, annotator) => (side === 'loupe' ? { cookie: cookies.get(annotator.id)!, origin: url } : byKey(side, annotator)),
    async (annotators) => {
      for (const annotator of annotators) if (!cookies.has(annotator.id)) cookies.set(annotator.id, (await signIn(url, annotator)).cookie);
    },
  );
  return {
    ...workload,
    details: () => ({
      ...workload.details(),
      sides: { loupe: 'session cookie (and Origin)', baseline: 'API key (Basic), same Loupe process' },
      sessions: cookies.size,
      sign_in_ms: { n: signInMs.length, p50: Math.round(percentile(signInMs, 50) * 10) / 10, p95: Math.round(percentile(signInMs, 95) * 10) / 10 },
    }),
  };
}

export const sessionProgressBench: WriteBench = {
  name: 'progress-session',
  initialRate: 6000,
  baseline: 'loupe',
  targets: { sqlite: 0.95, postgresql: 0.95 },
  annotators: async () => ({ passwordHash: await hashPassword(PASSWORD) }),
  setUp,
};

export function sessionProgressBenchmark(settings: Settings, workDir: string): Promise<Section> {
  return writeSection(
    sessionProgressBench,
    'POST …/items/{item}/progress as in "progress", sent with the loupe_session cookie of a password sign-in ("loupe") against the same ' +
      'requests with API keys ("baseline"), both to one Loupe process; set-up reports POST /auth/sign-in latency (argon2id)',
    settings,
    workDir,
  );
}
