import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { REPO_ROOT, createUserViaCli, runProcess, startChildServer, type ChildServer, type CliUser, type ProcessRun } from '../harness/child-server.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { rest } from '../harness/http.ts';

// The README's examples are scripts/examples.sh: the README shows the script's blocks, and the
// script runs as written against the real server, as a reader runs it after `npm start`.

const SCRIPT = 'scripts/examples.sh';
const FENCE = '```sh scripts/examples.sh\n';

/** The README's code blocks marked as parts of the script, in order. */
function readmeBlocks(): string[] {
  const readme = readFileSync(`${REPO_ROOT}README.md`, 'utf8');
  return readme
    .split(FENCE)
    .slice(1)
    .map((rest) => rest.slice(0, rest.indexOf('\n```')));
}

describe('README examples', () => {
  it('the README shows exactly the script: its blocks, in order, are everything after the header', () => {
    const script = readFileSync(`${REPO_ROOT}${SCRIPT}`, 'utf8');
    const split = script.indexOf('\n\n');
    const header = script.slice(0, split).split('\n');
    // The header only explains and sets up; every command a reader sees is in the README.
    for (const line of header) expect(line).toMatch(/^(#|set -euo pipefail$|cd "\$\(dirname "\$0"\)\/\.\."$)/);
    const blocks = readmeBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    expect(script.slice(split + 2)).toBe(`${blocks.join('\n\n')}\n`);
  });
});

/** `bash scripts/examples.sh` from a shell with no npm variables in it, as a reader runs it. */
function runScript(env: Record<string, string>): Promise<ProcessRun> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
  return runProcess('bash', [SCRIPT], { ...base, ...env }, { replaceEnv: true });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describeEachBackend('README examples run as written', (backend) => {
  let database: TestDatabase;
  let server: ChildServer;
  /** Another member of acme, to look at what the script stored. */
  let reader: CliUser;
  beforeAll(async () => {
    database = await freshDatabase(backend);
    server = await startChildServer({ databaseUrl: database.url });
    reader = await createUserViaCli(database.url, { entity: 'acme', role: 'viewer' });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  it('every step answers 2xx, each id comes from the answer before, and the purge deletes what replace stored', async () => {
    // The CLI's round trip writes its files in a folder of mktemp's, which TMPDIR puts here.
    const scratch = mkdtempSync(join(tmpdir(), 'loupe-readme-'));
    const run = await runScript({ LOUPE_URL: server.url, DATABASE_URL: database.url, TMPDIR: scratch }).finally(() => rmSync(scratch, { recursive: true, force: true }));
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    // Neither npm nor curl said anything (no banner, no error); the CLI's summaries are its only words.
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^calls: 2 of 2 records stored; lines 1-2; /),
      expect.stringMatching(/^feedback: 1 of 1 records stored; lines 1; /),
      expect.stringMatching(/^queue: 2 records exported to .*labels\.csv; /),
      expect.stringMatching(/^feedback: 1 records? exported/),
    ]);

    const lines = run.stdout.trimEnd().split('\n');
    const captured = (name: string) => lines.find((line) => line.startsWith(`${name}=`))!.slice(name.length + 1);
    const json = (line: string) => JSON.parse(line) as Record<string, any>;
    const [Q, ITEM, NOTE, NEW, REF, CQ] = ['Q', 'ITEM', 'NOTE', 'NEW', 'REF', 'CQ'].map(captured) as [string, string, string, string, string, string];
    for (const id of [Q, ITEM, NOTE, NEW]) expect(id).toMatch(UUID);
    expect(NEW).not.toBe(NOTE);
    expect(REF).toMatch(/^svc:\/\/\/acme\/bot\/object\/helpfulness:[^/:]+$/);

    // One line per example, in the README's order.
    const expected: ((line: string) => void)[] = [
      (l) => expect(l).toMatch(/^[\w.-]+\/[\w.:-]+$/), // a model id of the catalog
      (l) => expect(json(l)).toMatchObject({ username: expect.stringMatching(/^alice-/), memberships: [{ entity: 'acme', role: 'member' }] }),
      (l) => expect(json(l).queues.map((q: { name: string }) => q.name)).toEqual(['Tone check (not started)', 'Agent runs', 'Support answers to review']),
      (l) => expect(json(l)).toEqual({ res: [{ id: 'call-1' }] }),
      (l) => expect(json(l).call).toMatchObject({ project_id: 'acme/bot', id: 'call-1', op_name: 'answer', inputs: { q: 'hi' } }),
      (l) => expect(json(l).calls.map((c: { id: string }) => c.id)).toEqual(['call-1']),
      (l) => expect(json(l).projects).toEqual([expect.objectContaining({ project_id: 'acme/bot', counts: { calls: 1, queues: 0, feedback: 0 } })]),
      (l) => expect(l).toBe(`REF=${REF}`),
      (l) => expect(json(l).specs).toEqual([expect.objectContaining({ ref: REF, name: 'helpfulness' })]),
      (l) => expect(l).toBe(`Q=${Q}`),
      (l) => expect(json(l).queues).toEqual([expect.objectContaining({ id: Q, name: 'Review', scorer_refs: [REF] })]),
      (l) => expect(json(l).queue).toMatchObject({ id: Q, description: null }),
      (l) => expect(json(l).queue).toMatchObject({ id: Q, description: 'weekly' }),
      (l) => expect(json(l)).toEqual({ added_count: 1, duplicates: [], missing_call_ids: [] }),
      (l) => expect(json(l).items).toEqual([expect.objectContaining({ id: ITEM, call_id: 'call-1', annotation_state: 'unstarted', position_in_queue: 1 })]),
      (l) => expect(l).toBe(`ITEM=${ITEM}`),
      (l) => expect(json(l).item).toMatchObject({ id: ITEM, annotation_state: 'completed' }),
      (l) => expect(json(l).stats).toEqual([expect.objectContaining({ queue_id: Q, total_items: 1, completed_items: 1 })]),
      (l) => expect(json(l).item).toMatchObject({ id: ITEM, deleted_at: expect.any(String) }),
      (l) => expect(json(l).queue).toMatchObject({ id: Q, deleted_at: expect.any(String) }),
      (l) => expect(l).toBe(`NOTE=${NOTE}`),
      (l) => expect(json(l)).toMatchObject({ id: expect.stringMatching(UUID), payload: { up: true } }),
      (l) => expect(json(l).result).toEqual([expect.objectContaining({ feedback_type: 'svc.reaction.1', payload: expect.objectContaining({ detoned: '👍' }) })]),
      (l) => expect(l).toBe(`NEW=${NEW}`),
      (l) => expect(json(l)).toEqual({ deleted_count: 1 }),
      (l) => expect(l).toMatch(/^ME=/),
      (l) => expect(json(l)).toEqual({ users: [{ user_id: captured('ME'), username: expect.stringMatching(/^alice-/) }] }),
      // OpenTelemetry: the SDK's trace, its root, and its LLM call found by model.
      (l) => expect(l).toMatch(/^TRACE=[0-9a-f]{32}$/),
      (l) => expect(json(l).calls).toEqual([expect.objectContaining({ trace_id: captured('TRACE'), op_name: 'invoke_agent weather', parent_id: null })]),
      (l) =>
        expect(json(l).calls).toEqual([
          expect.objectContaining({
            trace_id: captured('TRACE'),
            op_name: 'chat gpt-4o',
            parent_id: expect.stringMatching(/^[0-9a-f]{16}$/),
            inputs: { messages: [{ role: 'system', content: [{ type: 'text', content: 'You answer questions about the weather.' }] }, { role: 'user', content: [{ type: 'text', content: 'Weather in Paris?' }] }] },
            output: { messages: [{ role: 'assistant', content: [{ type: 'text', content: 'Sunny, 21 °C.' }], finish_reason: 'stop' }] },
            attributes: expect.objectContaining({ gen_ai: expect.objectContaining({ usage: { input_tokens: 42, output_tokens: 7 } }), resource: expect.objectContaining({ service: { name: 'weather-agent' } }) }),
          }),
        ]),
      // The CLI's round trip.
      (l) => expect(l).toBe(`CQ=${CQ}`),
      (l) => expect(l).toBe('2 added; 0 already in the queue; 0 not stored calls'),
      (l) => expect(json(l)).toMatchObject({ project_id: 'acme/cli', feedback_type: 'svc.annotation.correct', queue_id: CQ, payload: { value: true } }),
    ];
    expect(lines).toHaveLength(expected.length);
    expected.forEach((check, index) => check(lines[index]!));

    // What is stored afterwards, seen by another member of acme.
    const feedback = await rest(server, 'POST', '/feedback/query', { key: reader.api_key, body: { project_id: 'acme/bot', limit: 100 } });
    expect(feedback.status).toBe(200);
    const stored = feedback.body.result as { id: string; feedback_type: string; payload: Record<string, unknown> }[];
    expect(stored.map((f) => f.feedback_type).sort()).toEqual(['svc.annotation.helpfulness', 'svc.reaction.1', 'thumbs']);
    // The note was replaced (its first id is gone) and its replacement purged (gone too).
    expect(stored.map((f) => f.id)).not.toContain(NOTE);
    expect(stored.map((f) => f.id)).not.toContain(NEW);
    const queues = await rest(server, 'POST', '/annotation_queues/query', { key: reader.api_key, body: { project_id: 'acme/bot' } });
    expect(queues.status).toBe(200);
    expect(queues.body.queues).toEqual([]);
    const call = await rest(server, 'GET', '/calls/call-1?project_id=acme/bot', { key: reader.api_key });
    expect(call.status).toBe(200);
    // The example's trace: its three spans, each a call of the trace.
    const traced = await rest(server, 'POST', '/calls/query', { key: reader.api_key, body: { project_id: 'acme/traces', filter: { trace_ids: [captured('TRACE')] } } });
    expect(traced.body.calls.map((c: { op_name: string }) => c.op_name).sort()).toEqual(['chat gpt-4o', 'execute_tool get_weather', 'invoke_agent weather']);
    // The CLI's round trip: both calls in its queue, the label on the first.
    const stats = await rest(server, 'POST', '/annotation_queues/stats', { key: reader.api_key, body: { project_id: 'acme/cli', queue_ids: [CQ] } });
    expect(stats.body.stats[0]).toMatchObject({ total_items: 2 });
    const labels = await rest(server, 'POST', '/feedback/query', { key: reader.api_key, body: { project_id: 'acme/cli', filter: { queue_id: CQ } } });
    expect(labels.body.result.map((f: { call_ref: string; payload: unknown }) => [f.call_ref, f.payload])).toEqual([['svc:///acme/cli/call/c-1', { value: true }]]);
    // About thirty processes (npm, the admin tool, the CLI, node for the trace) on a machine that may be crowded.
  }, 180_000);
});
