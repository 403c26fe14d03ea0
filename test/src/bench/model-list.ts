import { createReadStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freshDatabase } from '../harness/databases.ts';
import { startLoupe, startScript, type Target } from './child.ts';
import { measure, type Measurement } from './load.ts';
import { side, type Comparison, type Section, type Settings } from './report.ts';

// GET /inference/router/partner/models, the route partners poll: Loupe against a bare Express app
// serving the same bytes, for a full answer (200) and a revalidation (If-None-Match → 304).

const PATH = '/inference/router/partner/models';
export const TARGET_RATIO = 0.8;
/** Headers that belong to one response, not to the representation; the baseline does not copy them. */
const PER_RESPONSE = new Set(['date', 'connection', 'keep-alive', 'x-request-id', 'content-length', 'transfer-encoding']);

type Case = { name: string; headers: Record<string, string>; expectStatus: number };

export async function modelListBenchmark(settings: Settings, workDir: string): Promise<Section> {
  const database = await freshDatabase('sqlite');
  const logFile = join(workDir, 'loupe-model-list.log');
  const targets: Target[] = [];
  try {
    const loupe = await startLoupe(database.url, logFile);
    targets.push(loupe);
    const reference = await fetch(loupe.url + PATH);
    const body = Buffer.from(await reference.arrayBuffer());
    if (reference.status !== 200) throw new Error(`Loupe answered ${reference.status} on ${PATH}`);
    const headers = Object.fromEntries([...reference.headers].filter(([name]) => !PER_RESPONSE.has(name)));
    const etag = headers.etag;
    if (!etag) throw new Error(`Loupe sent no ETag on ${PATH}`);
    const bodyFile = join(workDir, 'model-list.json');
    writeFileSync(bodyFile, body);
    const baseline = await startScript('baseline', new URL('./baseline-model-list.ts', import.meta.url), {
      BASELINE_BODY_FILE: bodyFile,
      BASELINE_HEADERS: JSON.stringify(headers),
    });
    targets.push(baseline);
    await sameAnswer(loupe.url, baseline.url, body, headers);

    const cases: Case[] = [
      { name: 'GET 200', headers: {}, expectStatus: 200 },
      { name: 'If-None-Match 304', headers: { 'if-none-match': etag }, expectStatus: 304 },
    ];
    const results: Comparison[] = [];
    const problems: string[] = [];
    for (const c of cases) {
      const run = async (target: Target, seconds: number) => {
        const m = await measure({ url: target.url + PATH, headers: c.headers, seconds, connections: settings.connections, expectStatus: c.expectStatus });
        for (const p of m.problems) problems.push(`${c.name}, ${target.name}: ${p}`);
        return m;
      };
      // Warm-up, discarded: JIT, connection set-up, the server's first-request caches.
      await run(loupe, settings.warmupSeconds);
      await run(baseline, settings.warmupSeconds);
      const rounds: Record<'loupe' | 'baseline', Measurement[]> = { loupe: [], baseline: [] };
      for (let round = 0; round < settings.rounds; round++) {
        // Alternate who goes first, so a drift in machine load does not favour one side.
        const order = round % 2 === 0 ? [loupe, baseline] : [baseline, loupe];
        for (const target of order) rounds[target.name as 'loupe' | 'baseline'].push(await run(target, settings.seconds));
      }
      const l = side(rounds.loupe);
      const b = side(rounds.baseline);
      results.push({ case: c.name, status: c.expectStatus, loupe: l, baseline: b, ratio: l.rps / b.rps });
    }
    const logLines = await countLines(logFile);
    return {
      name: 'model-list',
      description: `GET ${PATH}: Loupe (its own process, SQLite, log level ${process.env.LOUPE_LOG_LEVEL ?? 'info'}, logs to a file) against a bare Express 5 app serving the same bytes and headers`,
      target: { metric: 'requests/s ratio Loupe/baseline, per case', min: TARGET_RATIO },
      comparisons: results,
      details: { loupe_log_lines: logLines, etag, body_bytes: body.length, headers },
      problems,
      passed: problems.length === 0 && results.every((r) => r.ratio >= TARGET_RATIO),
    };
  } finally {
    for (const target of targets.reverse()) await target.stop();
    await database.drop();
  }
}

/** The comparison is only fair if both sides send the same bytes and the same headers. */
async function sameAnswer(loupeUrl: string, baselineUrl: string, body: Buffer, headers: Record<string, string>): Promise<void> {
  const reply = await fetch(baselineUrl + PATH);
  const bytes = Buffer.from(await reply.arrayBuffer());
  if (reply.status !== 200 || !bytes.equals(body)) throw new Error('the baseline does not serve the bytes Loupe serves');
  for (const [name, value] of Object.entries(headers)) {
    if (reply.headers.get(name) !== value) throw new Error(`baseline header ${name}: ${reply.headers.get(name)} ≠ Loupe's ${value}`);
  }
  for (const url of [loupeUrl, baselineUrl]) {
    const revalidated = await fetch(url + PATH, { headers: { 'if-none-match': headers.etag! } });
    if (revalidated.status !== 304) throw new Error(`${url} answered ${revalidated.status} to If-None-Match`);
  }
}

/** Lines in a file too large to read into one string (a run logs a few million). */
async function countLines(path: string): Promise<number> {
  let lines = 0;
  for await (const chunk of createReadStream(path)) {
    for (let i = (chunk as Buffer).indexOf(10); i !== -1; i = (chunk as Buffer).indexOf(10, i + 1)) lines++;
  }
  return lines;
}
