import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// CallFilter (contract 5.1) through POST /calls/query: each condition alone, together, and hostile
// values, against calls stored through the API. A second project holds the same words, so a match
// there would show a filter leaking across projects.

describeEachBackend('CallFilter', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  const projectId = 'acme/filter';
  const otherProject = 'acme/filter-other';

  const calls = [
    {
      id: 'c1', op_name: 'openai.chat', trace_id: 't1', started_at: '2026-01-01T00:00:00.000Z',
      inputs: { messages: [{ role: 'user', content: 'What is the Capital of France?' }] }, output: 'Paris is the capital.',
      attributes: { gen_ai: { request: { model: 'gpt-4o', temperature: 0.2 } }, stream: true, tries: 3 },
    },
    {
      id: 'c2', op_name: 'OpenAI.Embed', trace_id: 't1', started_at: '2026-01-02T00:00:00.000Z',
      inputs: { text: '100% of_the "quoted" NEAR OR *star*' }, output: { vector_note: 'done' },
      attributes: { gen_ai: { request: { model: 'text-embedding-3' } }, stream: false, tries: 1, note: null },
    },
    {
      id: 'c3', op_name: 'tool_call%_x', trace_id: 't2', started_at: '2026-01-03T00:00:00.000Z',
      inputs: { query: 'weather in Paris', count: 12 }, output: null, exception: 'Timeout after 30 s',
      attributes: { tries: 12, label: 'Paris' },
    },
    { id: 'c4', op_name: 'retrieve', trace_id: 't3', started_at: '2026-01-04T00:00:00.000Z', inputs: null, output: ['café', 'naïve'] },
  ];

  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    const stored = await rest(server, 'POST', '/calls/batch/create', {
      key: member.api_key,
      body: { batch: [...calls.map((c) => ({ project_id: projectId, ...c })), ...calls.map((c) => ({ ...c, project_id: otherProject, id: `other-${c.id}` }))] },
    });
    expect(stored.status, stored.text).toBe(200);
  });
  afterAll(() => server?.stop());

  const query = (filter: unknown, extra: Record<string, unknown> = {}) =>
    rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, filter, ...extra } });

  /** The ids of the calls the filter selects, in the query's order. */
  async function ids(filter: unknown): Promise<string[]> {
    const reply = await query(filter);
    expect(reply.status, reply.text).toBe(200);
    return reply.body.calls.map((call: { id: string }) => call.id);
  }

  it('selects by ids, op names, trace ids, times and exception', async () => {
    expect(await ids({})).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(await ids({ call_ids: ['c3', 'c1', 'nope'] })).toEqual(['c1', 'c3']);
    expect(await ids({ op_names: ['openai.chat'] })).toEqual(['c1']);
    expect(await ids({ trace_ids: ['t1'] })).toEqual(['c1', 'c2']);
    expect(await ids({ started_after: '2026-01-02T00:00:00.000Z' })).toEqual(['c2', 'c3', 'c4']);
    expect(await ids({ started_before: '2026-01-02T00:00:00.000Z' })).toEqual(['c1']);
    expect(await ids({ started_after: '2026-01-02T01:00:00+01:00', started_before: '2026-01-04T00:00:00Z' })).toEqual(['c2', 'c3']);
    expect(await ids({ has_exception: true })).toEqual(['c3']);
    expect(await ids({ has_exception: false })).toEqual(['c1', 'c2', 'c4']);
  });

  it('op_name_contains is a case-insensitive substring; % and _ are characters, not wildcards', async () => {
    expect(await ids({ op_name_contains: 'openai' })).toEqual(['c1', 'c2']);
    expect(await ids({ op_name_contains: 'EMBED' })).toEqual(['c2']);
    expect(await ids({ op_name_contains: '%_' })).toEqual(['c3']);
    expect(await ids({ op_name_contains: '_' })).toEqual(['c3']);
    expect(await ids({ op_name_contains: '%' })).toEqual(['c3']);
    expect(await ids({ op_name_contains: "'" })).toEqual([]);
  });

  it('text matches calls whose inputs or output hold every word, whole and case-insensitive', async () => {
    expect(await ids({ text: 'paris' })).toEqual(['c1', 'c3']);
    expect(await ids({ text: 'PARIS capital' })).toEqual(['c1']);
    expect(await ids({ text: 'capital weather' })).toEqual([]);
    expect(await ids({ text: 'Pari' })).toEqual([]); // whole words only
    expect(await ids({ text: 'france' })).toEqual(['c1']); // nested in an array of objects
    expect(await ids({ text: 'done' })).toEqual(['c2']); // output object
    expect(await ids({ text: 'CAFÉ' })).toEqual(['c4']); // output array, non-ASCII case folded
    // Keys and non-string values are not text: "messages", "role", 12.
    expect(await ids({ text: 'messages' })).toEqual([]);
    expect(await ids({ text: '12' })).toEqual([]);
    // Attributes and the op name are not searched.
    expect(await ids({ text: 'gpt' })).toEqual([]);
  });

  it('text is never search syntax: quotes, *, NEAR, OR and punctuation are plain words or ignored', async () => {
    expect(await ids({ text: '"quoted"' })).toEqual(['c2']);
    expect(await ids({ text: 'quoted"' })).toEqual(['c2']);
    expect(await ids({ text: 'NEAR' })).toEqual(['c2']);
    expect(await ids({ text: 'OR paris' })).toEqual([]); // OR is a word c1 lacks, not an operator
    expect(await ids({ text: 'star*' })).toEqual(['c2']);
    expect(await ids({ text: '*star' })).toEqual(['c2']);
    expect(await ids({ text: '100%' })).toEqual(['c2']);
    expect(await ids({ text: "paris' OR 1=1 --" })).toEqual([]);
    expect(await ids({ text: 'paris ( ) : ^ - + "' })).toEqual(['c1', 'c3']);
  });

  it('refuses a text with no word, too many words or too long with a 400 and its reason', async () => {
    for (const text of ['', '"*"', '%_ ( )']) {
      const reply = await query({ text });
      expect(reply.status, text).toBe(400);
      expect(reply.body.reason).toMatch(/text.*word/i);
    }
    const many = await query({ text: Array.from({ length: 17 }, (_, i) => `w${i}`).join(' ') });
    expect(many.status).toBe(400);
    expect(many.body.reason).toMatch(/more than 16 words/);
    const long = await query({ text: 'a'.repeat(257) });
    expect(long.status).toBe(400);
    expect(long.body.reason).toMatch(/text/);
    const huge = await query({ text: 'paris '.repeat(100_000) });
    expect(huge.status).toBe(400);
  });

  it('stores a call of more text than a text-search vector holds, and finds the words of its first 60,000 characters', async () => {
    const bigProject = 'acme/filter-big';
    const words = Array.from({ length: 100_000 }, (_, i) => `w${i}x${i * 7919}`);
    const text = words.join(' '); // 1.4 million characters of distinct words: more than a 1 MB tsvector holds
    const stored = await rest(server, 'POST', '/calls/batch/create', {
      key: member.api_key,
      body: { batch: [{ project_id: bigProject, id: 'big', op_name: 'big', started_at: '2026-02-01T00:00:00.000Z', inputs: { a: text }, output: text.toUpperCase() }] },
    });
    expect(stored.status, stored.text).toBe(200);
    const found = async (text: string) => {
      const reply = await query({ text }, { project_id: bigProject });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.calls.map((call: { id: string }) => call.id);
    };
    expect(await found(words[10]!)).toEqual(['big']);
    expect(await found(`${words[20]} ${words[10]}`)).toEqual(['big']);
    expect(await found(words[99_999]!)).toEqual([]); // past the indexed characters
  });

  it('attribute conditions: eq and neq by JSON type and value, exists, not_exists', async () => {
    expect(await ids({ attributes: [{ path: 'gen_ai.request.model', op: 'eq', value: 'gpt-4o' }] })).toEqual(['c1']);
    expect(await ids({ attributes: [{ path: 'gen_ai.request.model', op: 'neq', value: 'gpt-4o' }] })).toEqual(['c2', 'c3', 'c4']);
    expect(await ids({ attributes: [{ path: 'stream', op: 'eq', value: true }] })).toEqual(['c1']);
    expect(await ids({ attributes: [{ path: 'stream', op: 'eq', value: false }] })).toEqual(['c2']);
    expect(await ids({ attributes: [{ path: 'tries', op: 'eq', value: 1 }] })).toEqual(['c2']); // not `true`
    expect(await ids({ attributes: [{ path: 'tries', op: 'eq', value: '1' }] })).toEqual([]); // a string is not a number
    expect(await ids({ attributes: [{ path: 'gen_ai.request.temperature', op: 'eq', value: 0.2 }] })).toEqual(['c1']);
    expect(await ids({ attributes: [{ path: 'gen_ai.request', op: 'exists' }] })).toEqual(['c1', 'c2']);
    expect(await ids({ attributes: [{ path: 'note', op: 'exists' }] })).toEqual(['c2']); // a JSON null is present
    expect(await ids({ attributes: [{ path: 'gen_ai', op: 'not_exists' }] })).toEqual(['c3', 'c4']);
  });

  it('attribute conditions: gt, gte, lt, lte compare numbers only; contains is a substring of a string', async () => {
    expect(await ids({ attributes: [{ path: 'tries', op: 'gt', value: 3 }] })).toEqual(['c3']);
    expect(await ids({ attributes: [{ path: 'tries', op: 'gte', value: 3 }] })).toEqual(['c1', 'c3']);
    expect(await ids({ attributes: [{ path: 'tries', op: 'lt', value: 3 }] })).toEqual(['c2']);
    expect(await ids({ attributes: [{ path: 'tries', op: 'lte', value: 12 }] })).toEqual(['c1', 'c2', 'c3']);
    expect(await ids({ attributes: [{ path: 'gen_ai.request.temperature', op: 'lt', value: 1 }] })).toEqual(['c1']);
    expect(await ids({ attributes: [{ path: 'label', op: 'gt', value: 0 }] })).toEqual([]); // a string is never compared
    expect(await ids({ attributes: [{ path: 'gen_ai.request.model', op: 'contains', value: 'embedding' }] })).toEqual(['c2']);
    expect(await ids({ attributes: [{ path: 'gen_ai.request.model', op: 'contains', value: 'GPT' }] })).toEqual([]); // case-sensitive
    expect(await ids({ attributes: [{ path: 'label', op: 'contains', value: "%'_" }] })).toEqual([]);
    expect(await ids({ attributes: [{ path: 'tries', op: 'contains', value: '1' }] })).toEqual([]); // a number is no string
  });

  it('every condition given must hold, and paging keeps the filter', async () => {
    const filter = { op_name_contains: 'a', text: 'paris', attributes: [{ path: 'tries', op: 'gte', value: 3 }, { path: 'label', op: 'not_exists' }] };
    expect(await ids(filter)).toEqual(['c1']);
    const first = await query({ text: 'paris' }, { limit: 1 });
    expect(first.body.calls.map((c: { id: string }) => c.id)).toEqual(['c1']);
    const second = await query({ text: 'paris' }, { limit: 1, cursor: first.body.next_cursor });
    expect(second.status, second.text).toBe(200);
    expect(second.body.calls.map((c: { id: string }) => c.id)).toEqual(['c3']);
  });

  describe('parents', () => {
    // A tree in two traces, stored children first (no foreign key: spans arrive in any order):
    //   trace tA: rA ─┬─ a1 ─── a11
    //                 └─ a2
    //   trace tB: rB ─── b1;  o1 names a parent never stored.
    const parentProject = 'acme/filter-parents';
    const tree = [
      { id: 'a11', trace_id: 'tA', parent_id: 'a1', started_at: '2026-03-01T00:00:03.000Z', inputs: { q: 'deep leaf' } },
      { id: 'a1', trace_id: 'tA', parent_id: 'rA', started_at: '2026-03-01T00:00:01.000Z', inputs: { q: 'leaf one' } },
      { id: 'a2', trace_id: 'tA', parent_id: 'rA', started_at: '2026-03-01T00:00:02.000Z', exception: 'boom' },
      { id: 'b1', trace_id: 'tB', parent_id: 'rB', started_at: '2026-03-01T00:00:01.500Z', inputs: { q: 'leaf two' } },
      { id: 'o1', trace_id: 'tB', parent_id: 'missing', started_at: '2026-03-01T00:00:05.000Z' },
      { id: 'rA', trace_id: 'tA', parent_id: null, started_at: '2026-03-01T00:00:00.000Z', inputs: { q: 'root question' } },
      { id: 'rB', trace_id: 'tB', started_at: '2026-03-01T00:00:00.500Z', inputs: { q: 'root question' } },
    ];
    const inParents = (filter: unknown) => query(filter, { project_id: parentProject });
    const parentIds = async (filter: unknown) => {
      const reply = await inParents(filter);
      expect(reply.status, reply.text).toBe(200);
      return reply.body.calls.map((call: { id: string }) => call.id);
    };

    beforeAll(async () => {
      const batch = tree.map((c) => ({ project_id: parentProject, op_name: 'step', ...c }));
      // The same tree in another project, which no filter may reach.
      const other = tree.map((c) => ({ project_id: otherProject, op_name: 'step', ...c, id: `p-${c.id}` }));
      const stored = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [...batch, ...other] } });
      expect(stored.status, stored.text).toBe(200);
    });

    it('parent_ids selects the calls that ran inside the given calls, a parent stored or not', async () => {
      expect(await parentIds({ parent_ids: ['rA'] })).toEqual(['a1', 'a2']);
      expect(await parentIds({ parent_ids: ['rA', 'a1', 'rB'] })).toEqual(['a1', 'b1', 'a2', 'a11']);
      expect(await parentIds({ parent_ids: ['missing'] })).toEqual(['o1']);
      expect(await parentIds({ parent_ids: ['a11', 'nobody'] })).toEqual([]); // a leaf has no children
      expect(await parentIds({ parent_ids: [] })).toEqual([]);
    });

    it('root_only selects the calls with no parent; false is no condition', async () => {
      expect(await parentIds({ root_only: true })).toEqual(['rA', 'rB']);
      expect(await parentIds({ root_only: false })).toEqual(['rA', 'rB', 'a1', 'b1', 'a2', 'a11', 'o1']);
      // A call whose parent is missing is not a root: it names a parent.
      expect(await parentIds({ root_only: true, trace_ids: ['tB'] })).toEqual(['rB']);
    });

    it('the calls of a trace nested by parent: a trace\'s root, then each call\'s children within the trace', async () => {
      expect(await parentIds({ trace_ids: ['tA'], root_only: true })).toEqual(['rA']);
      expect(await parentIds({ trace_ids: ['tA'], parent_ids: ['rA'] })).toEqual(['a1', 'a2']);
      expect(await parentIds({ trace_ids: ['tB'], parent_ids: ['rA'] })).toEqual([]);
      expect(await parentIds({ root_only: true, parent_ids: ['rA'] })).toEqual([]); // both must hold
    });

    it('combines with the other conditions', async () => {
      expect(await parentIds({ parent_ids: ['rA', 'rB'], text: 'leaf' })).toEqual(['a1', 'b1']);
      expect(await parentIds({ root_only: true, text: 'question', started_after: '2026-03-01T00:00:00.100Z' })).toEqual(['rB']);
      expect(await parentIds({ parent_ids: ['rA'], has_exception: true })).toEqual(['a2']);
      expect(await parentIds({ parent_ids: ['rA', 'a1'], call_ids: ['a11', 'a2', 'rA'] })).toEqual(['a2', 'a11']);
    });

    it('pages through a filtered set by cursor, each page in order, none repeated or skipped', async () => {
      for (const [filter, expected] of [
        [{ root_only: false, trace_ids: ['tA', 'tB'] }, ['rA', 'rB', 'a1', 'b1', 'a2', 'a11', 'o1']],
        [{ parent_ids: ['rA', 'a1', 'rB', 'missing'] }, ['a1', 'b1', 'a2', 'a11', 'o1']],
        [{ text: 'leaf', parent_ids: ['rA', 'a1', 'rB'] }, ['a1', 'b1', 'a11']],
        [{ root_only: true }, ['rA', 'rB']],
      ] as const) {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 10; page++) {
          const next = await query(filter, { project_id: parentProject, limit: 2, ...(cursor ? { cursor } : {}) });
          expect(next.status, next.text).toBe(200);
          seen.push(...next.body.calls.map((call: { id: string }) => call.id));
          cursor = next.body.next_cursor ?? undefined;
          if (!cursor) break;
        }
        expect(seen, JSON.stringify(filter)).toEqual(expected);
      }
      // A cursor belongs to its filter: another filter refuses it.
      const first = await query({ root_only: true }, { project_id: parentProject, limit: 1 });
      const mixed = await query({ parent_ids: ['rA'] }, { project_id: parentProject, limit: 1, cursor: first.body.next_cursor });
      expect(mixed.status, mixed.text).toBe(400);
    });

    it('refuses bad parent conditions with a 400 naming the field', async () => {
      for (const [filter, reason] of [
        [{ parent_ids: ['has/slash'] }, /parent_ids/],
        [{ parent_ids: ['x'.repeat(129)] }, /parent_ids/],
        [{ parent_ids: 'rA' }, /parent_ids/],
        [{ parent_ids: Array.from({ length: 1001 }, (_, i) => `p${i}`) }, /parent_ids/],
        [{ root_only: 'yes' }, /root_only/],
        [{ root_only: null }, /root_only/],
      ] as const) {
        const reply = await inParents(filter);
        expect(reply.status, JSON.stringify(filter).slice(0, 80)).toBe(400);
        expect(reply.body.reason).toMatch(reason);
      }
    });
  });

  it('refuses bad attribute conditions with a 400 naming the field', async () => {
    const bad: [unknown, RegExp][] = [
      [{ path: 'a..b', op: 'eq', value: 1 }, /path/],
      [{ path: "a'); drop table calls; --", op: 'exists' }, /path/],
      [{ path: '$.a', op: 'exists' }, /path/],
      [{ path: 'a."b"', op: 'exists' }, /path/],
      [{ path: '0.a', op: 'exists' }, /path/],
      [{ path: 'a'.repeat(257), op: 'exists' }, /path/],
      [{ path: Array.from({ length: 17 }, () => 'a').join('.'), op: 'exists' }, /path/],
      [{ path: 'a', op: 'like', value: 'x' }, /op/],
      [{ path: 'a', op: 'eq' }, /value/],
      [{ path: 'a', op: 'exists', value: 1 }, /value/],
      [{ path: 'a', op: 'gt', value: '3' }, /value/],
      [{ path: 'a', op: 'contains', value: 3 }, /value/],
      [{ path: 'a', op: 'eq', value: { nested: 1 } }, /value/],
    ];
    for (const [condition, reason] of bad) {
      const reply = await query({ attributes: [condition] });
      expect(reply.status, JSON.stringify(condition)).toBe(400);
      expect(reply.body.reason, JSON.stringify(condition)).toMatch(reason);
    }
    const tooMany = await query({ attributes: Array.from({ length: 21 }, () => ({ path: 'a', op: 'exists' })) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.reason).toMatch(/attributes/);
    const unknown = await query({ parent_id: 'x' });
    expect(unknown.status).toBe(400);
    // The table is still there and whole.
    expect(await ids({})).toEqual(['c1', 'c2', 'c3', 'c4']);
  });
});
