import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { client, createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { runCli, runCliJson, spawnCli, type CliTarget } from './cli-process.ts';
import { feedbackLine } from './data.ts';

// Issue 23 point 7: a hostile input file. The CLI runs with the heap bound of `npm run loupe`
// (96 MB); a line nested 200,000 levels deep, a line longer than the server's body limit and a
// 200 MB file without a newline are each that line's error, never a crash, and the rest is stored.

type Summary = {
  lines_read: number;
  stored: number;
  stored_lines: [number, number][];
  bad_lines: number;
  bad: { line: number; reason: string; status: number | null }[];
  stopped_at_line: number | null;
  fatal: unknown;
};

const MIB = 1024 * 1024;
const DEEP = 200_000;

describeEachBackend('loupe import: hostile files', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let dir: string;
  const as = (): CliTarget => ({ url: server.url, apiKey: member.api_key });

  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-hostile-'));
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Writes lines (strings as they are) with \n after each, streaming, so that large ones cost no test heap. */
  async function writeLines(name: string, lines: (string | (() => Iterable<string>))[]): Promise<string> {
    const path = join(dir, name);
    const out = createWriteStream(path);
    for (const line of lines) {
      for (const part of typeof line === 'string' ? [line] : line()) if (!out.write(part)) await once(out, 'drain');
      out.write('\n');
    }
    out.end();
    await once(out, 'finish');
    return path;
  }
  const good = (project: string, n: number) => JSON.stringify(feedbackLine(project, project, n, true));
  const storedCount = async (project: string) => {
    const { projects } = await client(server, member.api_key).projects.query.query({});
    return projects.find((p) => p.project_id === project)?.counts.feedback ?? 0;
  };

  it('a line of 200,000 nested arrays is that line\'s error; the other lines are stored (exit 3)', async () => {
    const project = 'acme/deep';
    const nested = '['.repeat(DEEP) + ']'.repeat(DEEP);
    const deepObject = `{"project_id":"${project}","svc_ref":"svc:///${project}/call/x","feedback_type":"score","payload":{"v":${nested}}}`;
    const path = await writeLines('deep.jsonl', [good(project, 0), nested, good(project, 2), deepObject, good(project, 4)]);
    const summary = await runCliJson<Summary>(as(), ['import', 'feedback', path, '--on-error', 'skip'], 3);
    expect(summary).toMatchObject({ lines_read: 5, stored: 3, stored_lines: [[1, 1], [3, 3], [5, 5]], bad_lines: 2, fatal: null });
    expect(summary.bad.map((b) => b.line)).toEqual([2, 4]);
    for (const bad of summary.bad) expect(bad).toMatchObject({ status: null, reason: expect.stringMatching(/nests objects and arrays deeper than 62 levels/) });
    expect(await storedCount(project)).toBe(3);

    // --on-error stop (the default): the line before it is stored, and the summary says where it stopped.
    const stopped = await runCli(as(), ['import', 'feedback', path, '--project', project]);
    expect(stopped.code, stopped.stderr).toBe(3);
    expect(stopped.stderr).toMatch(/^line 2: nests objects and arrays deeper than 62 levels/m);
    expect(stopped.stderr).toMatch(/1 of 1 records stored; lines 1; 1 bad line; stopped at line 2/);
  });

  it('a line longer than the body limit is refused as too long before parsing; the lines around it are stored (exit 3)', async () => {
    const project = 'acme/long';
    // 40 MB of one string in a record: past the server's default body limit (32 MiB).
    const long = () => [`{"project_id":"${project}","svc_ref":"svc:///${project}/call/x","feedback_type":"score","payload":{"text":"`, ...Array.from({ length: 40 }, () => 'x'.repeat(MIB)), '"}}'];
    const path = await writeLines('long.jsonl', [good(project, 0), good(project, 1), long, good(project, 3)]);
    const summary = await runCliJson<Summary>(as(), ['import', 'feedback', path, '--on-error', 'skip'], 3);
    expect(summary).toMatchObject({ lines_read: 4, stored: 3, stored_lines: [[1, 2], [4, 4]], bad_lines: 1, fatal: null });
    expect(summary.bad[0]).toMatchObject({ line: 3, status: null, reason: expect.stringMatching(/longer than 33,554,432 bytes/) });
    expect(await storedCount(project)).toBe(3);
    // A smaller limit of the option's own: the same file with the limit at 1 KiB.
    const small = await runCliJson<Summary>(as(), ['import', 'feedback', path, '--on-error', 'skip', '--max-line-bytes', '1024'], 3);
    expect(small).toMatchObject({ stored: 3, bad_lines: 1 });
    expect(small.bad[0]!.reason).toMatch(/longer than 1,024 bytes/);
  });

  it('a 200 MB file without a newline is one line too long: a summary and exit 3, no heap crash', async () => {
    const path = join(dir, 'no-newline.jsonl');
    const out = createWriteStream(path);
    const block = '[1,'.repeat(MIB / 3);
    for (let written = 0; written < 200 * MIB; written += block.length) if (!out.write(block)) await once(out, 'drain');
    out.end();
    await once(out, 'finish');
    const run = await runCli(as(), ['--json', 'import', 'feedback', path, '--project', 'acme/no-newline']);
    expect(run.code, run.stderr.slice(-2000)).toBe(3);
    expect(run.stderr).not.toMatch(/heap|allocation failed|stack/i);
    const summary = JSON.parse(run.stdout.trim().split('\n').pop()!) as Summary;
    expect(summary).toMatchObject({ lines_read: 1, stored: 0, bad_lines: 1, stopped_at_line: 1, fatal: null });
    expect(summary.bad[0]!.reason).toMatch(/longer than 33,554,432 bytes/);
    expect(run.stderr).toMatch(/^line 1: longer than/m);
  });

  it('a bad line of each kind, from stdin as from a file, keeps the line numbers and ids of the rest', async () => {
    const lines = Array.from({ length: 6 }, (_, n) => JSON.stringify(feedbackLine(undefined, 'acme/ids', n, false)));
    lines[0] = 'z'.repeat(3000); // the first line names the input: too long, its head still does
    lines[2] = '['.repeat(1000); // under the line limit, past the depth limit
    const path = join(dir, 'ids.jsonl');
    writeFileSync(path, lines.join('\r\n'));
    const args = (project: string, file: string) => ['import', 'feedback', file, '--project', project, '--on-error', 'skip', '--max-line-bytes', '1024'];
    const summary = await runCliJson<Summary>(as(), args('acme/ids', path), 3);
    expect(summary).toMatchObject({ lines_read: 6, stored: 4, stored_lines: [[2, 2], [4, 6]], bad_lines: 2 });
    expect(summary.bad.map((b) => [b.line, b.reason.slice(0, 12)])).toEqual([[1, 'longer than '], [3, 'nests object']]);
    const idsOf = async (project: string) => (await client(server, member.api_key).feedback.query.query({ project_id: project, limit: 100 })).result.map((f) => f.id).sort();
    const ids = await idsOf('acme/ids');
    expect(ids).toHaveLength(4);
    // The same file again stores nothing twice; read from stdin in small pieces, it gives the same
    // ids (a line with another id would be stored as a new record).
    await runCliJson<Summary>(as(), args('acme/ids', path), 3);
    expect(await idsOf('acme/ids')).toEqual(ids);
    const child = spawnCli(as(), ['--json', ...args('acme/ids', '-')], { stdin: true });
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const bytes = readFileSync(path);
    for (let at = 0; at < bytes.length; at += 1000) {
      child.stdin!.write(bytes.subarray(at, at + 1000));
      await new Promise((resolve) => setImmediate(resolve));
    }
    child.stdin!.end();
    expect(await exited).toBe(3);
    expect(JSON.parse(stdout)).toMatchObject({ stored: 4, stored_lines: [[2, 2], [4, 6]], bad_lines: 2 });
    expect(await idsOf('acme/ids')).toEqual(ids);
  });

  it('large lines are sent a few at a time: 8 calls of 6 MB each are stored within the 96 MB heap', async () => {
    const project = 'acme/large';
    const call = (n: number) => () => [`{"id":"large-${n}","op_name":"chat","started_at":"2026-01-02T03:04:05.678Z","inputs":{"text":"`, ...Array.from({ length: 6 }, () => 'x'.repeat(MIB)), '"}}'];
    const path = await writeLines('large.jsonl', Array.from({ length: 8 }, (_, n) => call(n)));
    const summary = await runCliJson<Summary>(as(), ['import', 'calls', path, '--project', project]);
    expect(summary).toMatchObject({ stored: 8, stored_lines: [[1, 8]], bad_lines: 0, fatal: null });
    const { projects } = await client(server, member.api_key).projects.query.query({});
    expect(projects.find((p) => p.project_id === project)?.counts.calls).toBe(8);
  });
});
