import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { client, createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { runCli, runCliJson, writeJsonl, type CliTarget } from './cli-process.ts';
import { callLine } from './data.ts';

// The whole round trip from the CLI: a rubric field, a queue, the calls of a file in it (by the ids
// `import calls` derived for lines without one), or the calls of an op name; and the usage errors
// and messages around them.

describeEachBackend('loupe specs and queues: the round trip from the CLI', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let target: CliTarget;
  let dir: string;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    target = { url: server.url, apiKey: member.api_key };
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-trip-'));
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates a spec and a queue, and adds the calls of a file (derived ids included) and of an op name', async () => {
    const project = 'acme/trip';
    const path = join(dir, 'calls.jsonl');
    // Half the lines bring an id, half get one derived by the import.
    writeJsonl(path, Array.from({ length: 30 }, (_, n) => callLine(undefined, n, n % 2 === 0)));
    expect((await runCli(target, ['import', 'calls', path, '--project', project])).code).toBe(0);

    const spec = await runCliJson<{ ref: string }>(target, ['specs', 'create', '--project', project, '--name', 'correct', '--schema', '{"type":"boolean"}']);
    expect(spec.ref).toMatch(/^svc:\/\/\/acme\/trip\/object\/correct:/);
    const human = await runCli(target, ['specs', 'create', '--project', project, '--name', 'tone', '--schema', '{"enum":["kind","curt"]}']);
    expect(human.stdout.trim()).toMatch(/^svc:\/\/\/acme\/trip\/object\/tone:/);
    const queue = await runCli(target, ['queues', 'create', '--project', project, '--name', 'review', '--spec', spec.ref, '--spec', human.stdout.trim(), '--annotations-per-item', '2']);
    expect(queue.code, queue.stderr).toBe(0);
    const queueId = queue.stdout.trim();
    const stored = (await client(server, member.api_key).annotationQueues.read.query({ project_id: project, queue_id: queueId })).queue;
    expect(stored).toMatchObject({ name: 'review', annotations_per_item: 2, scorer_refs: [spec.ref, human.stdout.trim()] });

    const added = await runCli(target, ['queues', 'add', queueId, '--project', project, '--from-file', path]);
    expect(added.stdout.trim()).toBe('30 added; 0 already in the queue; 0 not stored calls');
    const again = await runCliJson<{ added_count: number; duplicates: number; missing: number }>(target, ['queues', 'add', queueId, '--project', project, '--from-file', path]);
    expect(again).toMatchObject({ added_count: 0, duplicates: 30, missing: 0 });
    const byOp = await runCliJson<{ added_count: number; duplicates: number }>(target, ['queues', 'add', queueId, '--project', project, '--op-name', 'answer']);
    expect(byOp).toMatchObject({ added_count: 0, duplicates: 10 });
    const { items } = await client(server, member.api_key).annotationQueues.items.query.query({ project_id: project, queue_id: queueId, limit: 100 });
    const { calls } = await client(server, member.api_key).calls.query.query({ project_id: project, limit: 100 });
    expect(items.map((item) => item.call_id).sort()).toEqual(calls.map((call) => call.id).sort());
  });

  it('says how many records an import stored anew: a repeat import stores none and says so', async () => {
    const project = 'acme/again';
    const path = join(dir, 'again.jsonl');
    writeJsonl(path, Array.from({ length: 12 }, (_, n) => callLine(undefined, n, true)));
    const first = await runCli(target, ['import', 'calls', path, '--project', project]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/^calls: 12 of 12 records stored; lines 1-12; 12 new; /m);
    const again = await runCli(target, ['import', 'calls', path, '--project', project]);
    expect(again.stderr).toMatch(/^calls: 12 of 12 records stored; lines 1-12; 0 new \(all already stored\); /m);
    const json = await runCliJson<{ stored: number; new_records: number }>(target, ['import', 'calls', path, '--project', project]);
    expect(json).toMatchObject({ stored: 12, new_records: 0 });
    // The count is the server's, per answer: two new calls among ten stored ones.
    writeJsonl(path, Array.from({ length: 12 }, (_, n) => callLine(undefined, n < 10 ? n : n + 100, true)));
    expect((await runCliJson<{ new_records: number }>(target, ['import', 'calls', path, '--project', project])).new_records).toBe(2);
    const { calls } = await client(server, member.api_key).calls.query.query({ project_id: project, limit: 100 });
    expect(calls).toHaveLength(14);
  });

  it('says what is wrong: usage errors exit 1, an unreachable server is named, a refusal exits 2', async () => {
    const badSchema = await runCli(target, ['specs', 'create', '--project', 'acme/trip', '--name', 'x', '--schema', '{nope']);
    expect(badSchema.code).toBe(1);
    expect(badSchema.stderr).toMatch(/--schema is not JSON/);
    const neither = await runCli(target, ['queues', 'add', 'q', '--project', 'acme/trip']);
    expect(neither.code).toBe(1);
    expect(neither.stderr).toMatch(/--from-file FILE or --op-name NAME/);
    const path = join(dir, 'no-project.jsonl');
    writeJsonl(path, [callLine(undefined, 1, true)]);
    const noProject = await runCli(target, ['import', 'calls', path]);
    expect(noProject.code).toBe(1);
    expect(noProject.stderr).toMatch(/line 1 has no project_id: pass --project/);
    const away = await runCli({ url: 'http://127.0.0.1:1', apiKey: member.api_key }, ['whoami']);
    expect(away.code).toBe(2);
    expect(away.stderr).toMatch(/could not reach http:\/\/127\.0\.0\.1:1/);
    const refused = await runCli(target, ['specs', 'create', '--project', 'other/trip', '--name', 'x', '--schema', '{}']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/403/);
  });
});
