import { callFilterConditions, callFilterTable, sql, sqlRows, sqlRun, unitOfWork, type Em } from '@loupe/server';
import type { CallFilter } from '@loupe/shared';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Each CallFilter condition (contract 5.1) on a populated project, through each database's own
// EXPLAIN: a page's plan never reads the calls table whole, the conditions an index serves use it,
// and the others are tested along the (project_id, started_at, id) walk that is the page's order,
// which stops when the page is full (server/src/db/README.md, "Calls: which index serves which
// condition"). On PostgreSQL the plan is run (EXPLAIN ANALYZE) and the rows it read are counted.

const PROJECT = 'acme/plans';
const CALLS = 20_000;
const PAGE = 51; // a page of 50 reads one more row, to know whether another page follows
const START = Date.parse('2026-01-01T00:00:00.000Z');
const id = (n: number) => `c-${String(n).padStart(6, '0')}`;

function callOf(n: number) {
  const root = n - (n % 10);
  return {
    project_id: PROJECT,
    id: id(n),
    trace_id: `t-${root}`,
    parent_id: n === root ? null : id(root),
    op_name: n % 200 === 7 ? 'rare-op' : `op-${n % 7}`,
    started_at: new Date(START + n * 1000).toISOString(),
    exception: n % 100 === 3 ? 'boom' : null,
    inputs: { prompt: `${n % 2 ? 'plain' : 'ordinary'} words ${n % 1000 === 5 ? 'zephyr' : 'breeze'}` },
    output: { text: 'an answer' },
    attributes: { model: n % 3 ? 'small' : 'large', tokens: n % 500 },
  };
}

/** What a condition's page must look like. */
type Expect = {
  /** An index the plan uses (any one of them). */
  uses?: readonly string[];
  /** Read in the page's order: no sort of the matching rows. */
  ordered?: boolean;
  /** PostgreSQL: at most this many rows of calls read (index entries and heap rows the scans passed). */
  reads?: number;
};

/** The index behind each table's primary key, by dialect. */
const PRIMARY = { sqlite: 'sqlite_autoindex_calls_1', postgresql: 'calls_pkey' } as const;
const TEXT = { sqlite: 'calls_text', postgresql: 'calls_text_idx' } as const;

describeEachBackend('CallFilter plans', (backend) => {
  let server: TestServer;
  let em: Em;

  beforeAll(async () => {
    server = await startTestServer(backend);
    const member = await createUser(server, { entity: 'acme', role: 'member' });
    const all = Array.from({ length: CALLS }, (_, n) => callOf(n));
    // A second project with the same calls, so that no plan may lean on the project being the table.
    const other = all.slice(0, 2000).map((c) => ({ ...c, project_id: 'acme/plans-other' }));
    for (const batch of chunks([...all, ...other], 5000)) {
      const stored = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch } });
      expect(stored.status, stored.text).toBe(200);
    }
    em = unitOfWork(server.server.services.orm);
    // The statistics autovacuum gathers after a bulk write; SQLite keeps none unless told to, and
    // the server does not tell it.
    if (backend === 'postgresql') await sqlRun(em, sql`analyze calls`);
  }, 120_000);
  afterAll(() => server?.stop());

  /** The page's statement as the calls query runs it: its filter, then the keyset order and limit (see queryCalls, budgetedPage). */
  async function page(filter: CallFilter, after?: [string, string]) {
    const where = [sql`project_id = ${PROJECT}`, ...callFilterConditions(em, filter)];
    if (after) {
      const at = backend === 'sqlite' ? sql`${Date.parse(after[0])}` : sql`${after[0]}::timestamptz`;
      where.push(sql`(started_at, id) > (${at}, ${after[1]})`);
    }
    return sql`select project_id, id from ${await callFilterTable(em, filter)} where ${sql.join(where, ' and ')} order by started_at, id limit ${PAGE}`;
  }

  type Plan = { text: string; indexes: Set<string>; sorted: boolean; fullScan: boolean; rowsRead: number };

  async function plan(filter: CallFilter, after?: [string, string]): Promise<Plan> {
    if (backend === 'sqlite') {
      const rows = await sqlRows<{ detail: string }>(em, sql`explain query plan ${await page(filter, after)}`);
      const details = rows.map((row) => row.detail);
      const indexes = new Set(details.flatMap((d) => [...d.matchAll(/USING (?:COVERING )?INDEX (\w+)/g)].map((m) => m[1]!)));
      if (details.some((d) => /PRIMARY KEY|rowid=/.test(d))) indexes.add('rowid');
      if (details.some((d) => /^SCAN calls_text VIRTUAL TABLE/.test(d))) indexes.add('calls_text');
      return {
        text: details.join('\n'),
        indexes,
        sorted: details.some((d) => /TEMP B-TREE FOR (RIGHT PART OF )?ORDER BY/.test(d)),
        fullScan: details.some((d) => /^SCAN calls\b(?!_)/.test(d)),
        rowsRead: Number.NaN,
      };
    }
    const [row] = await sqlRows<{ 'QUERY PLAN': unknown }>(em, sql`explain (analyze, format json) ${await page(filter, after)}`);
    const root = (row!['QUERY PLAN'] as { Plan: PgNode }[])[0]!.Plan;
    const nodes = flatten(root);
    const onCalls = nodes.filter((node) => node['Relation Name'] === 'calls' || (node['Index Name'] && !node['Relation Name']));
    return {
      text: JSON.stringify(root, ['Node Type', 'Index Name', 'Index Cond', 'Filter', 'Actual Rows', 'Rows Removed by Filter', 'Plans'], 1),
      indexes: new Set(nodes.map((node) => node['Index Name']).filter((name): name is string => Boolean(name))),
      sorted: nodes.some((node) => node['Node Type'] === 'Sort'),
      fullScan: nodes.some((node) => node['Node Type'] === 'Seq Scan'),
      rowsRead: onCalls.reduce((sum, node) => sum + (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1) + (node['Rows Removed by Filter'] ?? 0), 0),
    };
  }

  async function check(name: string, filter: CallFilter, expected: Expect, after?: [string, string]) {
    const found = await plan(filter, after);
    const why = `${name}\n${found.text}`;
    if (process.env.LOUPE_PRINT_PLANS) console.log(`[${backend}] ${why}`);
    expect(found.fullScan, why).toBe(false);
    if (expected.uses) expect(expected.uses.some((index) => found.indexes.has(index)), why).toBe(true);
    if (expected.ordered) expect(found.sorted, why).toBe(false);
    if (backend === 'postgresql' && expected.reads !== undefined) expect(found.rowsRead, why).toBeLessThanOrEqual(expected.reads);
  }

  // A project of 20,000 calls: rare conditions (a few dozen calls) must be found through an index,
  // in a few hundred rows read at most; a walk in order reads until the page is full.
  const RARE = 1500;

  it('call_ids, op_names, trace_ids and parents are found through their indexes', async () => {
    await check('call_ids', { call_ids: [id(5), id(19_000), id(777)] }, { uses: [PRIMARY[backend], 'rowid'], reads: 10 });
    await check('one rare op name, in order', { op_names: ['rare-op'] }, { uses: ['calls_op_name_idx'], ordered: true, reads: RARE });
    await check('op names', { op_names: ['rare-op', 'nope'] }, { uses: ['calls_op_name_idx'], reads: RARE });
    await check('trace_ids', { trace_ids: ['t-100', 't-5000'] }, { uses: ['calls_trace_parent_idx'], reads: 100 });
    await check("a trace's root", { trace_ids: ['t-100'], root_only: true }, { uses: ['calls_trace_parent_idx'], reads: 10 });
    await check("a call's children within its trace", { trace_ids: ['t-100'], parent_ids: [id(100)] }, { uses: ['calls_trace_parent_idx', 'calls_parent_idx'], reads: 20 });
    await check('parent_ids', { parent_ids: [id(100), id(12_340)] }, { uses: ['calls_parent_idx'], reads: 100 });
    await check('one parent, in order', { parent_ids: [id(100)] }, { uses: ['calls_parent_idx'], ordered: true, reads: 20 });
  });

  it('root_only, time ranges and has_exception: true are read in order from their indexes', async () => {
    await check('root_only', { root_only: true }, { uses: ['calls_parent_idx', 'calls_started_idx'], ordered: true, reads: RARE });
    await check('started_after', { started_after: new Date(START + 15_000_000).toISOString() }, { uses: ['calls_started_idx'], ordered: true, reads: 200 });
    await check('time range', { started_after: new Date(START + 9_000_000).toISOString(), started_before: new Date(START + 9_030_000).toISOString() }, { uses: ['calls_started_idx'], ordered: true, reads: 200 });
    await check('has_exception', { has_exception: true }, { uses: ['calls_exception_idx'], ordered: true, reads: 200 });
  });

  it('text is found through the full-text index, a rare word and a common one, and after a cursor', async () => {
    await check('a rare word', { text: 'zephyr' }, { uses: [TEXT[backend]], reads: RARE });
    // Half the calls hold it: the walk in order finds a page in about 100 calls.
    await check('a common word', { text: 'ordinary' }, { uses: [TEXT[backend], 'calls_started_idx'], reads: RARE });
    await check('a rare word after a cursor', { text: 'zephyr' }, { uses: [TEXT[backend]], reads: RARE }, ['2026-01-01T02:00:00.000Z', id(7200)]);
    await check('a common word after a cursor', { text: 'ordinary' }, { uses: [TEXT[backend], 'calls_started_idx'], reads: RARE }, ['2026-01-01T02:00:00.000Z', id(7200)]);
    await check('text and a rare op name', { text: 'ordinary', op_names: ['rare-op'] }, { uses: ['calls_op_name_idx', TEXT[backend]], reads: RARE });
  });

  it('op_name_contains, has_exception: false and attributes are tested along the walk in order, which stops when the page is full', async () => {
    const walk = { uses: ['calls_started_idx'], ordered: true } as const;
    await check('op_name_contains', { op_name_contains: 'OP-3' }, { ...walk, reads: RARE });
    await check('has_exception: false', { has_exception: false }, { ...walk, reads: RARE });
    await check('an attribute', { attributes: [{ path: 'model', op: 'eq', value: 'large' }] }, { ...walk, reads: RARE });
    await check('attribute comparisons', { attributes: [{ path: 'tokens', op: 'gt', value: 10 }, { path: 'model', op: 'contains', value: 'mal' }] }, { ...walk, reads: RARE });
    await check('attributes after a cursor', { attributes: [{ path: 'tokens', op: 'gte', value: 100 }] }, { ...walk, reads: RARE }, ['2026-01-01T02:00:00.000Z', id(7200)]);
  });
});

type PgNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PgNode[];
};

function flatten(node: PgNode): PgNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

function chunks<T>(values: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}
