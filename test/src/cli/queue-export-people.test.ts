import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { expectedJsonRows, exportFixture, type ExportFixture } from '../harness/export-fixture.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { parseJsonl, runCliJson, type CliTarget } from './cli-process.ts';

// Issue 25 point 9: the queue export names annotators by username (their ids in an extra column)
// and carries the notes and reactions given in the queue, in CSV and JSON Lines; compared with
// what the API stored.

describeEachBackend('loupe export queue: people by name, notes and reactions', (backend) => {
  let server: TestServer;
  let fixture: ExportFixture;
  let dir: string;
  const as = (): CliTarget => ({ url: server.url, apiKey: fixture.ana.api_key });

  beforeAll(async () => {
    server = await startTestServer(backend);
    fixture = await exportFixture(server, 'acme/people');
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-people-'));
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('JSON Lines: values by username, the shown annotator named, notes and reactions with who gave them', async () => {
    const out = join(dir, 'queue.jsonl');
    const summary = await runCliJson(as(), ['export', 'queue', fixture.queueId, '--project', fixture.projectId, '--out', out]);
    expect(summary).toMatchObject({ exported: 'queue', records: 2 });
    const rows = parseJsonl<Record<string, unknown>>(readFileSync(out, 'utf8'));
    const expected = expectedJsonRows(fixture);
    expect(rows).toHaveLength(expected.length);
    rows.forEach((row, n) => expect(row).toMatchObject(expected[n]!));
    // What the fixture wrote, spelled out once.
    const { ana, ben } = fixture;
    expect(rows[0]).toMatchObject({
      annotation_state: 'completed',
      annotator: ana.username,
      annotator_user_id: ana.user_id,
      scores: { verdict: { values: { [ana.username]: 'right', [ben.username]: 'wrong' }, majority: null } },
      notes: [{ by: ana.username, user_id: ana.user_id, note: 'Cites the policy, "30 days", correctly.' }],
      reactions: [{ by: ana.username, user_id: ana.user_id, emoji: '👍', alias: ':thumbs_up:' }],
      annotator_user_ids: { [ana.username]: ana.user_id, [ben.username]: ben.user_id },
    });
    expect(rows[1]).toMatchObject({ annotator: null, scores: { verdict: { values: {}, majority: null } }, annotator_user_ids: { [ben.username]: ben.user_id } });
  });

  it('CSV: a column per annotator by username, the ids in annotator_user_ids, notes and reactions as "name: text" lines', async () => {
    const out = join(dir, 'queue.csv');
    await runCliJson(as(), ['export', 'queue', fixture.queueId, '--project', fixture.projectId, '--format', 'csv', '--out', out]);
    const rows = parseCsv(readFileSync(out, 'utf8'), { columns: true }) as Record<string, string>[];
    const { ana, ben } = fixture;
    const [first, second] = [ana.username, ben.username].sort();
    expect(Object.keys(rows[0]!)).toEqual([
      'item_id', 'call_id', 'call_op_name', 'call_trace_id', 'call_started_at', 'call_ended_at', 'inputs', 'output', 'annotation_state', 'annotator', 'annotator_user_id',
      `verdict.${first}`, `verdict.${second}`, 'verdict.majority', 'notes', 'reactions', 'annotator_user_ids',
    ]);
    expect(rows.map((row) => row.item_id)).toEqual(fixture.items.map((item) => item.id));
    expect(rows[0]).toMatchObject({
      annotator: ana.username,
      annotator_user_id: ana.user_id,
      [`verdict.${ana.username}`]: 'right',
      [`verdict.${ben.username}`]: 'wrong',
      'verdict.majority': '',
      notes: `${ana.username}: Cites the policy, "30 days", correctly.`,
      reactions: `${ana.username}: 👍`,
    });
    expect(JSON.parse(rows[0]!.annotator_user_ids!)).toEqual({ [ana.username]: ana.user_id, [ben.username]: ben.user_id });
    // A note that starts a formula does not start its cell: the cell starts with the name.
    expect(rows[1]).toMatchObject({ annotator: '', notes: `${ben.username}: =HYPERLINK("https://evil.example")`, reactions: `${ben.username}: 🤔` });
  });
});
