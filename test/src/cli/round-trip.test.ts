import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createSpec } from '../harness/feedback.ts';
import { client, createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { parseJsonl, runCliJson, writeJsonl, type CliTarget } from './cli-process.ts';
import { callLine, feedbackLine } from './data.ts';

// The round trip of the README: import a JSON Lines file of calls and one of feedback through the
// CLI, queue the calls, annotate (imported too, by two annotators), export, and compare field by
// field with what went in.

const CALLS = 10_000;
const FEEDBACK = 20_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describeEachBackend('loupe import and export: round trip', (backend) => {
  let server: TestServer;
  let alice: CreatedKeyForTest;
  let bob: CreatedKeyForTest;
  let dir: string;
  const project = 'acme/round';
  const as = (user: CreatedKeyForTest): CliTarget => ({ url: server.url, apiKey: user.api_key });

  beforeAll(async () => {
    server = await startTestServer(backend);
    alice = await createUser(server, { entity: 'acme', role: 'member' });
    bob = await createUser(server, { entity: 'acme', role: 'member' });
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-round-'));
  });
  afterAll(async () => {
    const faults = server?.logs.filter((l) => (l.level as number) >= 50) ?? [];
    if (faults.length) console.error('server faults:', JSON.stringify(faults.slice(0, 3), null, 1));
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const callLines = Array.from({ length: CALLS }, (_, n) => callLine(n % 2 ? project : undefined, n, true));
  const feedbackLines = Array.from({ length: FEEDBACK }, (_, n) => feedbackLine(n % 2 ? project : undefined, project, n, n % 4 === 1));
  /** The `n` a feedback record was made from. */
  const nOf = (f: { payload: Record<string, unknown> }) => (typeof f.payload.n === 'number' ? f.payload.n : Number(String(f.payload.note).slice(5)));

  it('imports 10,000 calls and 20,000 feedback records (ids derived where missing, --project filling project_id)', async () => {
    writeJsonl(join(dir, 'calls.jsonl'), callLines);
    writeJsonl(join(dir, 'feedback.jsonl'), feedbackLines);
    const calls = await runCliJson(as(alice), ['import', 'calls', join(dir, 'calls.jsonl'), '--project', project]);
    expect(calls).toMatchObject({ kind: 'calls', records: CALLS, stored: CALLS, stored_lines: [[1, CALLS]], bad_lines: 0, fatal: null });
    const feedback = await runCliJson(as(alice), ['import', 'feedback', join(dir, 'feedback.jsonl'), '--project', project, '--batch-size', '700']);
    expect(feedback).toMatchObject({ kind: 'feedback', records: FEEDBACK, stored: FEEDBACK, stored_lines: [[1, FEEDBACK]], bad_lines: 0 });
    const { projects } = await client(server, alice.api_key).projects.query.query({});
    expect(projects.find((p) => p.project_id === project)?.counts).toMatchObject({ calls: CALLS, feedback: FEEDBACK });

    // The same file again stores nothing new: every line has the same id as before.
    const again = await runCliJson(as(alice), ['import', 'feedback', join(dir, 'feedback.jsonl'), '--project', project]);
    expect(again).toMatchObject({ stored: FEEDBACK, bad_lines: 0 });
    const after = await client(server, alice.api_key).projects.query.query({});
    expect(after.projects.find((p) => p.project_id === project)?.counts.feedback).toBe(FEEDBACK);
  });

  it('exports the feedback as JSON Lines and CSV, every field equal to what was imported', async () => {
    const out = join(dir, 'feedback-out.jsonl');
    const summary = await runCliJson(as(alice), ['export', 'feedback', '--project', project, '--out', out, '--page-size', '3000']);
    expect(summary).toMatchObject({ exported: 'feedback', records: FEEDBACK, out });
    const exported = parseJsonl<Record<string, any>>(readFileSync(out, 'utf8'));
    expect(exported).toHaveLength(FEEDBACK);
    expect(new Set(exported.map((f) => f.id)).size).toBe(FEEDBACK);
    const byN = new Map(exported.map((f) => [nOf(f as never), f]));
    expect(byN.size).toBe(FEEDBACK);
    for (let n = 0; n < FEEDBACK; n++) {
      const line = feedbackLines[n]!;
      const stored = byN.get(n)!;
      expect(stored.project_id).toBe(project);
      if (line.id) expect(stored.id).toBe(line.id);
      else expect(stored.id).toMatch(UUID);
      expect(stored.svc_ref).toBe(line.svc_ref);
      expect(stored.feedback_type).toBe(line.feedback_type);
      expect(stored.creator).toBe(line.creator ?? null);
      expect(stored.svc_user_id).toBe(alice.user_id);
      if (line.feedback_type === 'svc.reaction.1') expect(stored.payload).toEqual({ ...(line.payload as object), alias: ':thumbs_up:', detoned: '👍', detoned_alias: ':thumbs_up:' });
      else expect(stored.payload).toEqual(line.payload);
      for (const field of ['annotation_ref', 'runnable_ref', 'call_ref', 'trigger_ref', 'queue_id']) expect(stored[field]).toBeNull();
    }
    // Paged by cursor (contract 5.6) when the server answers next_cursor: never by offset then.
    const first = await client(server, alice.api_key).feedback.query.query({ project_id: project, limit: 1 });
    if ('next_cursor' in first) {
      const queries = server.logs.map((l) => String(l.url ?? '')).filter((url) => url.includes('feedback.query')).map(decodeURIComponent);
      expect(queries.filter((url) => url.includes('"cursor"')).length).toBeGreaterThanOrEqual(6);
      expect(queries.filter((url) => url.includes('"offset"'))).toEqual([]);
    }
    // Export order is the query's: created_at, then id.
    const keys = exported.map((f) => `${f.created_at} ${f.id}`);
    expect(keys).toEqual([...keys].sort());

    const csvOut = join(dir, 'feedback-out.csv');
    await runCliJson(as(alice), ['export', 'feedback', '--project', project, '--format', 'csv', '--out', csvOut, '--type', 'score']);
    const rows = parseCsv(readFileSync(csvOut, 'utf8'), { columns: true }) as Record<string, string>[];
    const scores = exported.filter((f) => f.feedback_type === 'score');
    expect(rows).toHaveLength(scores.length);
    expect(Object.keys(rows[0]!)).toEqual(['id', 'project_id', 'svc_ref', 'feedback_type', 'payload', 'creator', 'annotation_ref', 'runnable_ref', 'call_ref', 'trigger_ref', 'queue_id', 'svc_user_id', 'created_at']);
    rows.forEach((row, i) => {
      const f = scores[i]!;
      expect(row.id).toBe(f.id);
      expect(JSON.parse(row.payload!)).toEqual(f.payload);
      expect(row.creator).toBe('');
      expect(row.created_at).toBe(f.created_at);
    });
  });

  it('queues the calls, takes two annotators’ labels, and exports the queue with values, majority and mean', async () => {
    const api = client(server, alice.api_key);
    const quality = await createSpec(server, alice.api_key, project, 'quality', { type: 'integer', minimum: 1, maximum: 5 });
    const label = await createSpec(server, alice.api_key, project, 'label', { enum: ['good', 'bad'] });
    const { id: queueId } = await api.annotationQueues.create.mutate({ project_id: project, name: 'review', scorer_refs: [quality.ref, label.ref], annotations_per_item: 2 });
    const added = await api.annotationQueues.items.add.mutate({ project_id: project, queue_id: queueId, call_ids: callLines.map((c) => c.id as string) });
    expect(added.added_count).toBe(CALLS);

    // Each annotator labels the first 300 calls, by importing feedback lines, and marks progress.
    const labelled = 300;
    const annotate = (who: CreatedKeyForTest, n: number) => {
      const ref = `svc:///${project}/call/call-${n}`;
      const q = who === alice ? (n % 5) + 1 : ((n + 1) % 5) + 1;
      const l = who === alice ? 'good' : n % 2 ? 'good' : 'bad';
      const about = { project_id: project, svc_ref: ref, call_ref: ref, queue_id: queueId };
      return [
        { ...about, feedback_type: 'svc.annotation.quality', annotation_ref: quality.ref, payload: { value: q } },
        { ...about, feedback_type: 'svc.annotation.label', annotation_ref: label.ref, payload: { value: l } },
      ];
    };
    for (const who of [alice, bob]) {
      const file = join(dir, `labels-${who.username}.jsonl`);
      writeJsonl(file, Array.from({ length: labelled }, (_, n) => annotate(who, n)).flat());
      const summary = await runCliJson(as(who), ['import', 'feedback', file]);
      expect(summary).toMatchObject({ stored: labelled * 2, bad_lines: 0 });
      const { items } = await client(server, who.api_key).annotationQueues.items.query.query({ project_id: project, queue_id: queueId, limit: labelled });
      for (const item of items.slice(0, 20)) {
        await client(server, who.api_key).annotationQueues.items.progress.mutate({ project_id: project, queue_id: queueId, item_id: item.id, annotation_state: 'completed' });
      }
    }

    const out = join(dir, 'queue.jsonl');
    const summary = await runCliJson(as(alice), ['export', 'queue', queueId, '--project', project, '--out', out]);
    expect(summary).toMatchObject({ exported: 'queue', records: CALLS });
    const rows = parseJsonl<Record<string, any>>(readFileSync(out, 'utf8'));
    expect(rows).toHaveLength(CALLS);
    rows.forEach((row, n) => {
      const call = callLines[n]!;
      expect(row.call_id).toBe(call.id);
      expect(row.call_op_name).toBe(call.op_name);
      expect(row.call_started_at).toBe(call.started_at);
      expect(row.call_ended_at).toBe(call.ended_at);
      expect(row.inputs).toEqual(call.inputs);
      expect(row.output).toEqual(call.output);
      expect(row.annotation_state).toBe(n < 20 ? 'completed' : 'unstarted');
      if (n < labelled) {
        const qa = (n % 5) + 1;
        const qb = ((n + 1) % 5) + 1;
        expect(row.scores.quality).toEqual({ values: { [alice.username]: qa, [bob.username]: qb }, mean: (qa + qb) / 2 });
        const lb = n % 2 ? 'good' : 'bad';
        expect(row.scores.label).toEqual({ values: { [alice.username]: 'good', [bob.username]: lb }, majority: lb === 'good' ? 'good' : null });
      } else {
        expect(row.scores).toEqual({ quality: { values: {}, mean: null }, label: { values: {}, majority: null } });
      }
    });

    const csvOut = join(dir, 'queue.csv');
    await runCliJson(as(alice), ['export', 'queue', queueId, '--project', project, '--format', 'csv', '--out', csvOut]);
    const csvRows = parseCsv(readFileSync(csvOut, 'utf8'), { columns: true }) as Record<string, string>[];
    expect(csvRows).toHaveLength(CALLS);
    const [first, second] = [alice.username, bob.username].sort();
    expect(Object.keys(csvRows[0]!)).toEqual([
      'item_id', 'call_id', 'call_op_name', 'call_trace_id', 'call_started_at', 'call_ended_at', 'inputs', 'output', 'annotation_state', 'annotator', 'annotator_user_id',
      `quality.${first}`, `quality.${second}`, 'quality.mean', `label.${first}`, `label.${second}`, 'label.majority', 'notes', 'reactions', 'annotator_user_ids',
    ]);
    expect(csvRows[3]).toMatchObject({ call_id: 'call-3', [`quality.${alice.username}`]: '4', [`quality.${bob.username}`]: '5', 'quality.mean': '4.5', 'label.majority': 'good' });
    expect(JSON.parse(csvRows[3]!.inputs!)).toEqual(callLines[3]!.inputs);
    expect(csvRows[500]).toMatchObject({ 'quality.mean': '', 'label.majority': '' });
  });
});
