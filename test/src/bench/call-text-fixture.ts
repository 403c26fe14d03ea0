import { createUserViaCli } from '../harness/child-server.ts';
import { call, inParallel } from './bench-rest.ts';

// The projects the call-text benchmark searches, written through the server's own
// POST /calls/batch/create (so its text index is kept exactly as in production), in batches of
// 10,000 with several in flight. Every call has a prompt and a completion of ordinary words, and
// ids, times and traces that follow its number; NEEDLE is in 1 call in NEEDLE_EVERY, spread
// evenly but not regularly over time. Traces are TRACE_SIZE calls: a root and its children.

export const NEEDLE = 'zephyr';
export const NEEDLE_EVERY = 100;
const TRACE_SIZE = 10;
const BATCH = 2_000;
const CONCURRENCY = 4;
const START = Date.parse('2026-01-01T00:00:00.000Z');
/** Ordinary words: each is in about 1 call in 40, so they make an index of realistic size. */
const VOCABULARY = Array.from({ length: 1000 }, (_, i) => `w${(i * 7919).toString(36)}`);
const WORDS_PER_TEXT = 12;

/** A well-mixed 32-bit hash of n (so that the needle's calls follow no stride). */
function mix(n: number): number {
  let x = (n + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

export const hasNeedle = (n: number) => mix(n) % NEEDLE_EVERY === 0;
export const callId = (n: number) => `c-${n.toString().padStart(7, '0')}`;

function text(n: number, salt: number): string {
  const words: string[] = [];
  for (let w = 0; w < WORDS_PER_TEXT; w++) words.push(VOCABULARY[mix(n * 31 + w + salt) % VOCABULARY.length]!);
  return words.join(' ');
}

function callOf(projectId: string, n: number) {
  const root = n - (n % TRACE_SIZE);
  const startedAt = START + n;
  return {
    project_id: projectId,
    id: callId(n),
    trace_id: `t-${root}`,
    parent_id: n === root ? null : callId(root),
    op_name: n === root ? 'agent.run' : `tool-${n % 7}`,
    started_at: new Date(startedAt).toISOString(),
    ended_at: new Date(startedAt + 900).toISOString(),
    inputs: { prompt: hasNeedle(n) ? `${text(n, 1)} ${NEEDLE}` : text(n, 1) },
    output: { completion: text(n, 2) },
    attributes: { 'gen_ai': { request: { model: n % 3 ? 'small' : 'large' } } },
  };
}

export type TextProject = { projectId: string; size: number; seconds: number; calls_per_s: number };

/** The numbers (in order of start) of the calls of a project of `size` that hold the needle. */
export function needleCalls(size: number): number[] {
  const out: number[] = [];
  for (let n = 0; n < size; n++) if (hasNeedle(n)) out.push(n);
  return out;
}

/** Writes a project of `size` calls through the API; answers how long it took. */
async function writeProject(url: string, key: string, projectId: string, size: number): Promise<TextProject> {
  const began = performance.now();
  const batches = Array.from({ length: Math.ceil(size / BATCH) }, (_, b) => b);
  await inParallel(batches, CONCURRENCY, async (b) => {
    const batch = [];
    for (let n = b * BATCH; n < Math.min(size, (b + 1) * BATCH); n++) batch.push(callOf(projectId, n));
    const reply = await call<{ res: unknown[] }>(url, 'POST', '/calls/batch/create', key, { batch });
    if (reply.res.length !== batch.length) throw new Error(`calls/batch/create stored ${reply.res.length} of ${batch.length}`);
  });
  const seconds = (performance.now() - began) / 1000;
  return { projectId, size, seconds: Math.round(seconds * 10) / 10, calls_per_s: Math.round(size / seconds) };
}

/** The owner of the benchmark's projects, made with the admin CLI; answers its API key. */
export async function textOwner(databaseUrl: string): Promise<string> {
  return (await createUserViaCli(databaseUrl, { entity: 'bench', role: 'member', username: 'bench-text' })).api_key;
}

/** Writes a project of `size` calls through the API (`bench/text-<size>`). */
export async function buildTextProject(url: string, key: string, size: number): Promise<TextProject> {
  const project = await writeProject(url, key, `bench/text-${size}`, size);
  console.log(`call-text: wrote ${size.toLocaleString('en')} calls in ${project.seconds} s (${project.calls_per_s} calls/s)`);
  return project;
}
