import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { createCalls, createQueue, queryItems } from '../harness/queues.ts';
import { createRule, readRule, referenceSampled } from '../harness/rules.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { runCliJson, writeJsonl, type CliTarget } from './cli-process.ts';
import { callLine } from './data.ts';

// Contract 5.10 through the third door: `loupe import calls` stores its batches with
// calls/batch/create, so when the import has ended, the calls a rule matches and samples are
// items already. A line the server refuses (an id stored with other content) is no item.

const CALLS = 3_000;

describeEachBackend('loupe import calls fills queues through their rules', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let dir: string;
  const project = 'acme/rules-import';

  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-rules-'));
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the matching, sampled calls of the file are items when the import ends; a refused line is none', async () => {
    const target: CliTarget = { url: server.url, apiKey: member.api_key };
    // call-7 is stored already with other content: its line is refused (409) and skipped.
    await createCalls(server, member.api_key, project, [{ id: 'call-7', op_name: 'answer', started_at: '2026-01-01T00:00:00Z' }]);
    const answers = await createQueue(server, member.api_key, project);
    const sampled = await createQueue(server, member.api_key, project);
    const answersRule = await createRule(server, member.api_key, project, answers, { filter: { op_names: ['answer'], attributes: [{ path: 'tokens', op: 'lt', value: 50 }] } });
    const tenth = await createRule(server, member.api_key, project, sampled, { sample_rate: 0.1 });

    const lines = Array.from({ length: CALLS }, (_, n) => callLine(project, n, true));
    writeJsonl(join(dir, 'calls.jsonl'), lines);
    // Exit code 3: the import ended with a bad line.
    const summary = await runCliJson(target, ['import', 'calls', join(dir, 'calls.jsonl'), '--batch-size', '500', '--on-error', 'skip'], 3);
    expect(summary).toMatchObject({ kind: 'calls', records: CALLS, stored: CALLS - 1, bad_lines: 1 });

    const ids = async (queueId: string) => (await queryItems(server, member.api_key, project, queueId, { limit: 10_000 })).map((item) => item.call_id).sort();
    const storedLines = lines.filter((line) => line.id !== 'call-7');
    const matching = storedLines.filter((line) => line.op_name === 'answer' && (line.attributes as { tokens: number }).tokens < 50).map((line) => String(line.id));
    expect(await ids(answers)).toEqual(matching.sort());
    expect(await ids(sampled)).toEqual(storedLines.map((line) => String(line.id)).filter((id) => referenceSampled(tenth.id, id, 0.1)).sort());
    expect((await readRule(server, member.api_key, project, answers, answersRule.id)).stats).toMatchObject({ considered: CALLS - 1, matched: matching.length, added: matching.length });

    // The same file again stores nothing new and adds nothing.
    const again = await runCliJson(target, ['import', 'calls', join(dir, 'calls.jsonl'), '--on-error', 'skip'], 3);
    expect(again).toMatchObject({ records: CALLS, bad_lines: 1 });
    expect(await ids(answers)).toEqual(matching.sort());
    expect((await readRule(server, member.api_key, project, answers, answersRule.id)).stats.considered).toBe(CALLS - 1);
  }, 120_000);
});
