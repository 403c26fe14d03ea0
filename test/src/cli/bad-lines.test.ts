import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { client, createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { runCli, runCliJson, spawnCli, writeJsonl, type CliTarget } from './cli-process.ts';
import { feedbackLine, uuidOf } from './data.ts';

// Bad lines (reported with their line number and the server's reason; --on-error stop and skip),
// 413 splitting against a server with small limits, and the exit codes of refusals.

type Summary = { stored: number; stored_lines: [number, number][]; bad_lines: number; bad: { line: number; reason: string; status: number | null }[]; stopped_at_line: number | null };

describeEachBackend('loupe import: bad lines and limits', (backend) => {
  let server: TestServer;
  let small: TestServer;
  let member: CreatedKeyForTest;
  let smallMember: CreatedKeyForTest;
  let dir: string;
  const as = (s: TestServer, user: CreatedKeyForTest): CliTarget => ({ url: s.url, apiKey: user.api_key });

  beforeAll(async () => {
    server = await startTestServer(backend);
    // Small limits: at most 64 records and 24 KiB per request.
    small = await startTestServer(backend, { LOUPE_MAX_BATCH: '64', LOUPE_MAX_BODY_BYTES: String(24 * 1024) });
    member = await createUser(server, { entity: 'acme', role: 'member' });
    smallMember = await createUser(small, { entity: 'acme', role: 'member' });
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-bad-'));
  });
  afterAll(async () => {
    await server?.stop();
    await small?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** 1,000 lines of feedback for `project`, with the given lines replaced. */
  function fileWith(name: string, project: string, replaced: Record<number, unknown>): string {
    const lines = Array.from({ length: 1000 }, (_, i) => replaced[i + 1] ?? feedbackLine(project, project, i, true));
    const path = join(dir, name);
    writeJsonl(path, lines);
    return path;
  }
  const storedIds = async (project: string) => {
    const { result } = await client(server, member.api_key).feedback.query.query({ project_id: project, limit: 10_000 });
    return new Set(result.map((f) => f.id));
  };

  it('--on-error stop: the lines before the first bad one are stored, nothing after it is sent, exit 3', async () => {
    const project = 'acme/stop';
    const path = fileWith('stop.jsonl', project, { 250: { ...feedbackLine(project, project, 249, true), feedback_type: 'svc.bogus' } });
    const summary = await runCliJson<Summary>(as(server, member), ['import', 'feedback', path, '--batch-size', '100', '--concurrency', '1'], 3);
    expect(summary).toMatchObject({ stored: 249, stored_lines: [[1, 249]], bad_lines: 1, stopped_at_line: 250 });
    expect(summary.bad[0]).toMatchObject({ line: 250, status: 400 });
    expect(summary.bad[0]!.reason).toMatch(/svc\./);
    const ids = await storedIds(project);
    expect(ids.size).toBe(249);
    for (let n = 0; n < 249; n++) expect(ids.has(uuidOf(n))).toBe(true);
  });

  it('--on-error skip: every good line is stored, each bad one reported with its line and reason; a re-run stores nothing twice', async () => {
    const project = 'acme/skip';
    const path = fileWith('skip.jsonl', project, {
      17: '{"not json',
      250: { ...feedbackLine(project, project, 249, true), feedback_type: 'svc.bogus' },
      600: { project_id: project, feedback_type: 'x', payload: {} },
      900: { ...feedbackLine(project, project, 899, true), payload: 'not an object' },
      901: '[1, 2]',
    });
    const human = await runCli(as(server, member), ['import', 'feedback', path, '--on-error', 'skip', '--batch-size', '300']);
    expect(human.code, human.stderr).toBe(3);
    for (const line of [17, 250, 600, 900, 901]) expect(human.stderr).toMatch(new RegExp(`^line ${line}: .+`, 'm'));
    expect(human.stderr).toMatch(/^line 17: not valid JSON/m);
    expect(human.stderr).toMatch(/^line 901: not a JSON object$/m);
    expect(human.stderr).toMatch(/995 of 997 records stored|995 of 998 records stored/);
    expect((await storedIds(project)).size).toBe(995);

    const again = await runCliJson<Summary>(as(server, member), ['import', 'feedback', path, '--on-error', 'skip'], 3);
    expect(again).toMatchObject({ stored: 995, bad_lines: 5 });
    expect(again.bad.map((b) => b.line)).toEqual([17, 250, 600, 900, 901]);
    expect(again.stored_lines).toEqual([[1, 16], [18, 249], [251, 599], [601, 899], [902, 1000]]);
    expect((await storedIds(project)).size).toBe(995);
  });

  it('--on-error skip: bad lines of one batch each get their own reason, the same as each alone gets', async () => {
    const project = 'acme/own-reasons';
    const faults: Record<number, unknown> = {
      3: { ...feedbackLine(project, project, 2, true), payload: 'not an object' },
      4: { ...feedbackLine(project, project, 3, true), svc_ref: 42 },
      7: { ...feedbackLine(project, project, 6, true), creator: 'x'.repeat(300) },
    };
    const together = await runCliJson<Summary>(as(server, member), ['import', 'feedback', fileWith('own.jsonl', project, faults), '--on-error', 'skip'], 3);
    expect(together).toMatchObject({ stored: 997, bad_lines: 3 });
    const reasons = Object.fromEntries(together.bad.map((bad) => [bad.line, bad.reason]));
    // Each bad line alone in a file of its own: the reason the server gives for that line alone.
    for (const [line, fault] of Object.entries(faults)) {
      const alone = join(dir, `alone-${line}.jsonl`);
      writeJsonl(alone, [fault]);
      const summary = await runCliJson<Summary>(as(server, member), ['import', 'feedback', alone, '--on-error', 'skip'], 3);
      expect(reasons[line]).toBe(summary.bad[0]!.reason.replace('batch[0]', `batch[${Number(line) - 1}]`));
    }
    expect(new Set(Object.values(reasons)).size).toBe(3);
  });

  it('an id stored with other content is a bad line (409) with the server reason', async () => {
    const project = 'acme/conflict';
    const first = fileWith('first.jsonl', project, {});
    await runCliJson(as(server, member), ['import', 'feedback', first]);
    const changed = fileWith('changed.jsonl', project, { 10: { ...feedbackLine(project, project, 9, true), creator: 'someone else' } });
    const summary = await runCliJson<Summary>(as(server, member), ['import', 'feedback', changed, '--on-error', 'skip'], 3);
    expect(summary).toMatchObject({ stored: 999, bad_lines: 1 });
    expect(summary.bad[0]).toMatchObject({ line: 10, status: 409 });
    expect(summary.bad[0]!.reason).toMatch(/already exists/);
  });

  it('a 413 (too many records, or too many bytes) splits the batch until it fits; everything is stored once', async () => {
    const project = 'acme/split';
    const lines = Array.from({ length: 2000 }, (_, n) => ({ ...feedbackLine(project, project, n, false), feedback_type: 'score', payload: { n, text: 'x'.repeat(n % 10 === 0 ? 6000 : 50) } }));
    writeJsonl(join(dir, 'split.jsonl'), lines);
    const summary = await runCliJson<Summary>(as(small, smallMember), ['import', 'feedback', join(dir, 'split.jsonl')]);
    expect(summary).toMatchObject({ stored: 2000, stored_lines: [[1, 2000]], bad_lines: 0 });
    const { projects } = await client(small, smallMember.api_key).projects.query.query({});
    expect(projects.find((p) => p.project_id === project)?.counts.feedback).toBe(2000);
    // One record larger than the body limit is a bad line, not an endless split (exit 3: the input's fault).
    writeJsonl(join(dir, 'huge.jsonl'), [{ ...lines[0], payload: { text: 'y'.repeat(40_000) } }]);
    const huge = await runCliJson<Summary>(as(small, smallMember), ['import', 'feedback', join(dir, 'huge.jsonl'), '--project', project], 3);
    expect(huge).toMatchObject({ stored: 0, bad_lines: 1 });
    expect(huge.bad[0]).toMatchObject({ line: 1, status: 413 });
  });

  it('reads stdin with -, deriving the same ids as from the file', async () => {
    const project = 'acme/stdin';
    const path = join(dir, 'stdin.jsonl');
    writeJsonl(path, Array.from({ length: 2500 }, (_, n) => feedbackLine(undefined, project, n, false)));
    const child = spawnCli(as(server, member), ['--json', 'import', 'feedback', '-', '--project', project], { stdin: true });
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.stdin!.end(readFileSync(path));
    expect(await exited).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ stored: 2500, stored_lines: [[1, 2500]] });
    const fromFile = await runCliJson<Summary>(as(server, member), ['import', 'feedback', path, '--project', project]);
    expect(fromFile).toMatchObject({ stored: 2500, bad_lines: 0 });
    const { projects } = await client(server, member.api_key).projects.query.query({});
    expect(projects.find((p) => p.project_id === project)?.counts.feedback).toBe(2500);
  });

  it('whoami, models, queues list and stats answer with --json; refusals exit 2, usage errors 1', async () => {
    const target = as(server, member);
    const me = await runCliJson(target, ['whoami']);
    expect(me).toMatchObject({ user_id: member.user_id, username: member.username, memberships: [{ entity: 'acme', role: 'member' }] });
    const models = await runCliJson<{ data: { id: string }[] }>(target, ['models']);
    expect(models.data.length).toBeGreaterThan(0);
    const api = client(server, member.api_key);
    const { id: queueId } = await api.annotationQueues.create.mutate({ project_id: 'acme/stop', name: 'triage' });
    const list = await runCliJson<{ queues: { id: string; name: string }[] }>(target, ['queues', 'list', '--project', 'acme/stop']);
    expect(list.queues.map((q) => [q.id, q.name])).toEqual([[queueId, 'triage']]);
    const stats = await runCliJson(target, ['queues', 'stats', queueId, '--project', 'acme/stop']);
    expect(stats).toMatchObject({ queue_id: queueId, total_items: 0 });
    const human = await runCli(target, ['queues', 'stats', queueId, '--project', 'acme/stop']);
    expect(human.stdout).toContain(`${queueId}: 0 of 0 items done`);

    const badKey = await runCli({ url: server.url, apiKey: 'lp_wrong' }, ['whoami']);
    expect(badKey.code).toBe(2);
    expect(badKey.stderr).toMatch(/401/);
    const forbidden = await runCli(target, ['queues', 'list', '--project', 'globex/other']);
    expect(forbidden.code).toBe(2);
    expect(forbidden.stderr).toMatch(/403/);
    const unknownQueue = await runCli(target, ['export', 'queue', 'no-such-queue', '--project', 'acme/stop']);
    expect(unknownQueue.code).toBe(2);
    expect(unknownQueue.stderr).toMatch(/404/);
    expect((await runCli(target, ['frobnicate'])).code).toBe(1);
    expect((await runCli(target, ['export', 'feedback'])).code).toBe(1); // --project is required
    expect((await runCli(target, ['import', 'calls', join(dir, 'missing.jsonl')])).code).toBe(1);
    expect((await runCli({ url: server.url, apiKey: '' }, ['whoami'])).code).toBe(1);
    expect((await runCli(target, ['--help'])).code).toBe(0);
  });
});
