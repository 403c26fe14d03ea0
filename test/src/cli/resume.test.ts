import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUserViaCli, startChildServer, type ChildServer } from '../harness/child-server.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { client } from '../harness/http.ts';
import { freePort } from '../harness/ports.ts';
import { parseJsonl, runCliJson, spawnCli, writeJsonl, type CliTarget } from './cli-process.ts';

// Resumable import: the CLI is killed (SIGKILL) midway and run again; the server is killed midway
// and restarted while the CLI retries. Either way every record is stored exactly once, because
// each line's id is derived from the input and the line, and the server stores a repeated id once.

const RECORDS = 40_000;

describeEachBackend('loupe import: kill, resume and server restart', (backend) => {
  let database: TestDatabase;
  let port: number;
  let server: ChildServer;
  let target: CliTarget;
  let dir: string;

  beforeAll(async () => {
    database = await freshDatabase(backend);
    port = await freePort();
    server = await startChildServer({ databaseUrl: database.url, env: { PORT: String(port) } });
    const user = await createUserViaCli(database.url, { entity: 'acme', role: 'member' });
    target = { url: server.url, apiKey: user.api_key };
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-resume-'));
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A file of feedback lines without ids: the CLI derives them. */
  function input(name: string, project: string): string {
    const path = join(dir, name);
    writeJsonl(path, Array.from({ length: RECORDS }, (_, n) => ({ svc_ref: `svc:///${project}/call/c-${n % 500}`, feedback_type: 'score', payload: { n, value: n % 7 } })));
    return path;
  }
  const storedCount = async (project: string) => {
    const { projects } = await client(target, target.apiKey).projects.query.query({}).catch(() => ({ projects: [] }));
    return projects.find((p) => p.project_id === project)?.counts.feedback ?? 0;
  };
  /** Exports the project and checks that each n is stored exactly once. */
  async function expectEachOnce(project: string) {
    const out = join(dir, `${project.replace('/', '-')}.jsonl`);
    await runCliJson(target, ['export', 'feedback', '--project', project, '--out', out]);
    const rows = parseJsonl<{ id: string; payload: { n: number } }>(readFileSync(out, 'utf8'));
    expect(rows).toHaveLength(RECORDS);
    expect(new Set(rows.map((r) => r.id)).size).toBe(RECORDS);
    const ns = new Set(rows.map((r) => r.payload.n));
    expect(ns.size).toBe(RECORDS);
    expect(Math.min(...ns)).toBe(0);
    expect(Math.max(...ns)).toBe(RECORDS - 1);
  }
  /** Waits until at least `count` records of the project are stored. */
  async function storedAtLeast(project: string, count: number) {
    for (let i = 0; i < 1200; i++) {
      if ((await storedCount(project)) >= count) return;
      await sleep(50);
    }
    throw new Error(`fewer than ${count} records were stored in 60 s`);
  }

  it('SIGKILL midway, then a second run: every record exactly once', async () => {
    const project = 'acme/resume';
    const path = input('resume.jsonl', project);
    const args = ['--json', 'import', 'feedback', path, '--project', project, '--batch-size', '500', '--concurrency', '2'];
    const child = spawnCli(target, args);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await storedAtLeast(project, 5000);
    child.kill('SIGKILL');
    await exited;
    const midway = await storedCount(project);
    expect(midway).toBeGreaterThanOrEqual(5000);
    expect(midway).toBeLessThan(RECORDS);

    const summary = await runCliJson(target, args.slice(1));
    expect(summary).toMatchObject({ records: RECORDS, stored: RECORDS, stored_lines: [[1, RECORDS]], bad_lines: 0, fatal: null });
    expect(await storedCount(project)).toBe(RECORDS);
    await expectEachOnce(project);
  });

  it('the server is killed and restarted mid-import: the CLI retries, nothing is lost or doubled', async () => {
    const project = 'acme/restart';
    const path = input('restart.jsonl', project);
    const child = spawnCli(target, ['--json', 'import', 'feedback', path, '--project', project, '--batch-size', '500', '--concurrency', '2']);
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await storedAtLeast(project, 5000);
    await server.stop('SIGKILL');
    await sleep(1000);
    server = await startChildServer({ databaseUrl: database.url, env: { PORT: String(port) } });
    const code = await exited;
    expect(code, stdout).toBe(0);
    const summary = JSON.parse(stdout.trim().split('\n').pop()!) as { stored: number; retries: number; fatal: unknown };
    expect(summary).toMatchObject({ stored: RECORDS, fatal: null });
    expect(summary.retries).toBeGreaterThan(0);
    expect(await storedCount(project)).toBe(RECORDS);
    await expectEachOnce(project);
  });
});
