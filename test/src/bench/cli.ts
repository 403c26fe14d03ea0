import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { createClient } from '@loupe/client';
import { createUserViaCli, REPO_ROOT } from '../harness/child-server.ts';
import { CLI_ENTRY, CLI_NODE_FLAGS } from '../cli/cli-process.ts';
import { freshDatabase } from '../harness/databases.ts';
import { startLoupe } from './child.ts';
import type { Section, Settings } from './report.ts';

// The `loupe` CLI against the server it drives, on SQLite: importing a million feedback records
// from a JSON Lines file (against the server's own batch ingest rate in the same run: batches of
// 1,000, 4 in flight, sent by this process), then exporting them; the CLI's peak RSS each time.
//
// The server's own rate is measured under the CLI's conditions (same server process, batch size and
// concurrency, records of the same shapes with client-made ids) in short rounds around the import:
// half before it, into a project as empty as the CLI's is then, and half after it (and after the
// export, which must read the million alone), into the CLI's own project: ingest slows as the
// project grows (its records' random ids are inserted across its range of the (project_id, id)
// index, which outgrows SQLite's page cache), and a project of its own would stay small. The doors
// take turns (REST, /trpc, /trpc, REST, …) so that neither is always measured on the smaller
// database; the rate is the median of a door's rounds, as on a shared machine one round can fall
// in another process's burst of work, which a mean would carry into the ratio.

const TARGET_IMPORT_RATIO = 0.8;
const TARGET_EXPORT_RATE = 50_000;
const TARGET_RSS_MB = 150;
const CONCURRENCY = 4;
/** Rounds of the server's own ingest, each of BENCH_CLI_BASELINE_RECORDS / BASELINE_ROUNDS records: half before the import, half after. */
const BASELINE_ORDER: Door[] = ['rest', 'trpc', 'trpc', 'rest'];
const BASELINE_ROUNDS = 2 * BASELINE_ORDER.length;

type Door = 'rest' | 'trpc';

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function element(project: string, n: number): Record<string, unknown> {
  const svc_ref = `svc:///${project}/call/call-${n % 5000}`;
  switch (n % 4) {
    case 0:
      return { svc_ref, feedback_type: 'svc.note.1', payload: { note: `Answer ${n} cites the wrong policy section; see ticket.` } };
    case 1:
      return { svc_ref, feedback_type: 'svc.reaction.1', payload: { emoji: n % 8 === 1 ? '👍🏽' : '👎' } };
    default:
      return { svc_ref, feedback_type: 'thumbs', payload: { value: n % 5, reason: 'tone', tags: ['support', 'en'] }, creator: `user-${n % 97}` };
  }
}

async function writeInput(path: string, project: string, records: number): Promise<void> {
  const out = createWriteStream(path);
  for (let n = 0; n < records; n++) {
    if (!out.write(`${JSON.stringify(element(project, n))}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/**
 * The server's own ingest rate: batches of 1,000 with ids, `CONCURRENCY` in flight, from this
 * process, through REST (as the feedback-ingest bench sends them) or through the typed client's
 * door (/trpc, as the CLI sends them), so that the CLI's own cost can be told from the door's.
 */
async function serverIngestRate(url: string, apiKey: string, project: string, records: number, door: Door): Promise<number> {
  const headers = { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`api:${apiKey}`).toString('base64')}` };
  const client = createClient({ url, apiKey, batch: false });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < records) {
        const from = next;
        next += 1000;
        const batch = Array.from({ length: Math.min(1000, records - from) }, (_, i) => ({ project_id: project, id: randomUUID(), ...element(project, from + i) }));
        if (door === 'trpc') {
          await client.feedback.batchCreate.mutate({ batch: batch as never });
          continue;
        }
        const reply = await fetch(`${url}/feedback/batch/create`, { method: 'POST', headers, body: JSON.stringify({ batch }) });
        const text = await reply.text();
        if (reply.status !== 200) throw new Error(`Loupe answered ${reply.status}: ${text.slice(0, 300)}`);
      }
    }),
  );
  return records / ((performance.now() - started) / 1000);
}

type CliRun = { code: number | null; summary: Record<string, unknown>; peak_rss_mb: number; seconds: number };

/** Runs the CLI to its end, sampling its peak resident memory (VmHWM) while it runs. */
async function runCli(url: string, apiKey: string, args: string[]): Promise<CliRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [...CLI_NODE_FLAGS, CLI_ENTRY, '--json', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOUPE_URL: url, LOUPE_API_KEY: apiKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c.slice(-10_000)));
  let peakKb = 0;
  const sample = () => {
    try {
      const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
      peakKb = Math.max(peakKb, kb);
    } catch {
      // the process has just exited
    }
  };
  const timer = setInterval(sample, 50);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearInterval(timer);
  const last = stdout.trim().split('\n').pop() || stderr.trim().split('\n').pop() || '{}';
  let summary: Record<string, unknown>;
  try {
    summary = JSON.parse(last) as Record<string, unknown>;
  } catch {
    summary = { unparsed: last, stderr: stderr.slice(-2000) };
  }
  return { code, summary, peak_rss_mb: +(peakKb / 1024).toFixed(1), seconds: +((performance.now() - started) / 1000).toFixed(2) };
}

export async function cliBenchmark(_settings: Settings, workDir: string): Promise<Section> {
  const records = Number(process.env.BENCH_CLI_RECORDS ?? 1_000_000);
  const baselineRecords = Number(process.env.BENCH_CLI_BASELINE_RECORDS ?? 200_000);
  const database = await freshDatabase('sqlite');
  const loupe = await startLoupe(database.url, join(workDir, 'loupe-cli.log'));
  const problems: string[] = [];
  try {
    const user = await createUserViaCli(database.url, { entity: 'bench', role: 'member', username: 'cli-bench' });
    const input = join(workDir, 'feedback.jsonl');
    await writeInput(input, 'bench/cli', records);

    const rounds: Record<Door, number[]> = { rest: [], trpc: [] };
    const measure = async (project: string, doors: Door[]) => {
      for (const door of doors) rounds[door].push(await serverIngestRate(loupe.url, user.api_key, project, baselineRecords / BASELINE_ROUNDS, door));
    };
    await measure('bench/server', BASELINE_ORDER);
    const imported = await runCli(loupe.url, user.api_key, ['import', 'feedback', input, '--project', 'bench/cli']);
    if (imported.code !== 0 || imported.summary.stored !== records) problems.push(`import exited ${imported.code}: ${JSON.stringify(imported.summary).slice(0, 500)}`);
    const importRate = records / imported.seconds;

    const exported = await runCli(loupe.url, user.api_key, ['export', 'feedback', '--project', 'bench/cli', '--out', join(workDir, 'export.jsonl')]);
    if (exported.code !== 0 || exported.summary.records !== records) problems.push(`export exited ${exported.code}: ${JSON.stringify(exported.summary).slice(0, 500)}`);
    const exportRate = typeof exported.summary.records === 'number' ? exported.summary.records / exported.seconds : 0;

    await measure('bench/cli', [...BASELINE_ORDER].reverse());
    const serverRate = median(rounds.rest);
    const trpcRate = median(rounds.trpc);

    const results = {
      records,
      server_ingest_records_per_s: Math.round(serverRate),
      server_ingest_rounds: rounds.rest.map(Math.round),
      server_trpc_ingest_rounds: rounds.trpc.map(Math.round),
      server_trpc_ingest_records_per_s: Math.round(trpcRate),
      cli_import_records_per_s: Math.round(importRate),
      import_ratio: +(importRate / serverRate).toFixed(3),
      import_ratio_vs_trpc_door: +(importRate / trpcRate).toFixed(3),
      cli_import_peak_rss_mb: imported.peak_rss_mb,
      cli_export_records_per_s: Math.round(exportRate),
      cli_export_peak_rss_mb: exported.peak_rss_mb,
      import_seconds: imported.seconds,
      export_seconds: exported.seconds,
    };
    console.log('\ncli: loupe import/export of feedback on SQLite (process wall time, start-up included)');
    console.table([results]);
    const checks = [
      { what: `import ratio ${results.import_ratio} ≥ ${TARGET_IMPORT_RATIO}`, ok: results.import_ratio >= TARGET_IMPORT_RATIO },
      { what: `export ${results.cli_export_records_per_s} records/s ≥ ${TARGET_EXPORT_RATE}`, ok: results.cli_export_records_per_s >= TARGET_EXPORT_RATE },
      { what: `import peak RSS ${results.cli_import_peak_rss_mb} MB < ${TARGET_RSS_MB}`, ok: results.cli_import_peak_rss_mb < TARGET_RSS_MB },
      { what: `export peak RSS ${results.cli_export_peak_rss_mb} MB < ${TARGET_RSS_MB}`, ok: results.cli_export_peak_rss_mb < TARGET_RSS_MB },
    ];
    for (const check of checks) console.log(`${check.ok ? 'PASS' : 'FAIL'}: ${check.what}`);
    return {
      name: 'cli',
      description: 'loupe import of 1M feedback records from JSON Lines vs the server batch ingest rate; export of 1M; CLI peak RSS',
      target: { metric: 'import rate / server ingest rate (and export records/s, peak RSS)', min: TARGET_IMPORT_RATIO },
      comparisons: [],
      details: { ...results, checks },
      problems,
      passed: problems.length === 0 && checks.every((c) => c.ok),
    };
  } finally {
    await loupe.stop();
    await database.drop();
  }
}
