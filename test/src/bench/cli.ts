import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { createUserViaCli, REPO_ROOT } from '../harness/child-server.ts';
import { CLI_ENTRY, CLI_NODE_FLAGS } from '../cli/cli-process.ts';
import { freshDatabase } from '../harness/databases.ts';
import { startLoupe } from './child.ts';
import type { Section, Settings } from './report.ts';

// The `loupe` CLI against the server it drives, on SQLite: importing a million feedback records
// from a JSON Lines file, then exporting them, with the CLI's peak RSS each time; the import
// against the server's own batch ingest of the same million in the same run.
//
// The server's own rate is measured under the CLI's conditions: a server of the same build on a
// database of its own, as new as the CLI's, the same records in batches of 1,000 with 4 in flight,
// each with an id made by the client, ascending as the CLI's derived ids do (UUIDv7 here), sent
// by this process through REST. Ingest slows as the project grows (its indexes outgrow SQLite's
// page cache), so only the same number of records into an equally new database compares: the
// median of rounds of 25,000 records, some before the import and some after it, put the same
// CLI's ratio anywhere from 0.79 to 0.99.

const TARGET_IMPORT_RATIO = 0.8;
const TARGET_EXPORT_RATE = 50_000;
const TARGET_RSS_MB = 150;
const CONCURRENCY = 4;

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

/** The server's own ingest rate: batches of 1,000 with ascending client-made ids, `CONCURRENCY` in flight, from this process. */
async function serverIngestRate(url: string, apiKey: string, project: string, records: number): Promise<number> {
  const headers = { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`api:${apiKey}`).toString('base64')}` };
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < records) {
        const from = next;
        next += 1000;
        const batch = Array.from({ length: Math.min(1000, records - from) }, (_, i) => ({ project_id: project, id: uuidv7(), ...element(project, from + i) }));
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

/** A server of its own on a new SQLite database, its user, and `work` run against them. */
async function withLoupe<T>(name: string, workDir: string, work: (url: string, apiKey: string) => Promise<T>): Promise<T> {
  const database = await freshDatabase('sqlite');
  const loupe = await startLoupe(database.url, join(workDir, `loupe-${name}.log`));
  try {
    const user = await createUserViaCli(database.url, { entity: 'bench', role: 'member', username: name });
    return await work(loupe.url, user.api_key);
  } finally {
    await loupe.stop();
    await database.drop();
  }
}

export async function cliBenchmark(_settings: Settings, workDir: string): Promise<Section> {
  const records = Number(process.env.BENCH_CLI_RECORDS ?? 1_000_000);
  const problems: string[] = [];
  const input = join(workDir, 'feedback.jsonl');
  await writeInput(input, 'bench/cli', records);

  const serverRate = await withLoupe('cli-baseline', workDir, (url, apiKey) => serverIngestRate(url, apiKey, 'bench/cli', records));
  const { imported, exported } = await withLoupe('cli', workDir, async (url, apiKey) => {
    const imported = await runCli(url, apiKey, ['import', 'feedback', input, '--project', 'bench/cli']);
    if (imported.code !== 0 || imported.summary.stored !== records) problems.push(`import exited ${imported.code}: ${JSON.stringify(imported.summary).slice(0, 500)}`);
    const exported = await runCli(url, apiKey, ['export', 'feedback', '--project', 'bench/cli', '--out', join(workDir, 'export.jsonl')]);
    if (exported.code !== 0 || exported.summary.records !== records) problems.push(`export exited ${exported.code}: ${JSON.stringify(exported.summary).slice(0, 500)}`);
    return { imported, exported };
  });
  const importRate = records / imported.seconds;
  const exportRate = typeof exported.summary.records === 'number' ? exported.summary.records / exported.seconds : 0;
  const results = {
    records,
    server_ingest_records_per_s: Math.round(serverRate),
    cli_import_records_per_s: Math.round(importRate),
    import_ratio: +(importRate / serverRate).toFixed(3),
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
}
