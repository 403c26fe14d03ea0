import { ruleFilterProblem, type CallFilter } from '@loupe/shared';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createCalls, createQueue, queryItems, uniqueId } from '../harness/queues.ts';
import { createRule, preview } from '../harness/rules.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// One CallFilter, three places that evaluate it (contract 5.1, 5.10): the calls query (a where
// clause), a rule as calls are stored (a flag per rule over the new rows, text searched among the
// newest rows of SQLite's text index), and the preview (a scan of the newest calls). For generated
// filters over one set of varied calls, stored once before the rule and once after, the three
// must select the same calls, on each database.

const RUNS = 25;
const WORDS = ['paris', 'timeout', 'capital', 'weather', 'café'];
const OPS = ['openai.chat', 'OpenAI.Embed', 'tool_call', 'retrieve'];

function corpus() {
  return Array.from({ length: 40 }, (_, i) => ({
    id: `k${String(i).padStart(2, '0')}`,
    op_name: OPS[i % OPS.length]!,
    trace_id: `t${i % 5}`,
    started_at: new Date(Date.UTC(2026, 5, 1) + i * 60_000).toISOString(),
    ...(i % 7 === 3 ? { exception: 'Timeout after 30 s' } : {}),
    inputs: i % 6 === 5 ? null : { q: `${WORDS[i % WORDS.length]} and ${WORDS[(i * 3) % WORDS.length]}` },
    output: i % 4 === 0 ? `about ${WORDS[(i + 1) % WORDS.length]}` : null,
    attributes:
      i % 9 === 8
        ? null
        : {
            model: i % 3 ? 'gpt-4o' : 'gpt-4o-mini',
            tokens: i * 3,
            stream: i % 2 === 0,
            nested: { score: (i % 10) / 10, label: i % 5 ? `L${i % 5}` : null },
            ...(i % 4 === 1 ? { tag: 'x' } : {}),
          },
  }));
}

const attributeCondition = fc.oneof(
  fc.record({ path: fc.constantFrom('model', 'nested.label', 'tag'), op: fc.constantFrom('eq', 'neq'), value: fc.constantFrom('gpt-4o', 'gpt-4o-mini', 'L1', 'x', 'nope') }),
  fc.record({ path: fc.constantFrom('tokens', 'nested.score', 'model'), op: fc.constantFrom('gt', 'gte', 'lt', 'lte', 'eq', 'neq'), value: fc.integer({ min: 0, max: 120 }) }),
  fc.record({ path: fc.constantFrom('stream', 'tokens'), op: fc.constantFrom('eq', 'neq'), value: fc.boolean() }),
  fc.record({ path: fc.constantFrom('model', 'nested.label', 'tag', 'nested', 'missing.path'), op: fc.constantFrom('exists', 'not_exists') }),
  fc.record({ path: fc.constantFrom('model', 'nested.label', 'tokens'), op: fc.constant('contains'), value: fc.constantFrom('4o', 'mini', 'L', '') }),
);

const filters: fc.Arbitrary<CallFilter> = fc
  .record(
    {
      op_names: fc.subarray(OPS, { minLength: 1 }),
      op_name_contains: fc.constantFrom('openai', 'CALL', 'e', 'zzz'),
      trace_ids: fc.subarray(['t0', 't1', 't2', 't3', 't4'], { minLength: 1 }),
      has_exception: fc.boolean(),
      started_after: fc.integer({ min: 0, max: 40 }).map((i) => new Date(Date.UTC(2026, 5, 1) + i * 60_000).toISOString()),
      started_before: fc.integer({ min: 0, max: 40 }).map((i) => new Date(Date.UTC(2026, 5, 1) + i * 60_000 + 30_000).toISOString()),
      text: fc.subarray(WORDS, { minLength: 1, maxLength: 2 }).map((words) => words.join(' ')),
      attributes: fc.array(attributeCondition, { minLength: 1, maxLength: 3 }),
    },
    { requiredKeys: [] },
  )
  .map((filter) => filter as CallFilter)
  .filter((filter) => ruleFilterProblem('call', filter) === null);

describeEachBackend('a CallFilter selects the same calls in the calls query, in a rule and in a preview', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;

  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  it(`agrees for ${RUNS} generated filters`, async () => {
    await fc.assert(
      fc.asyncProperty(filters, async (filter) => {
        // The same calls once before the rule exists (which it does not see) and once after.
        const projectId = `acme/${uniqueId('agree')}`;
        const queueId = await createQueue(server, member.api_key, projectId);
        await createCalls(server, member.api_key, projectId, corpus().map((call) => ({ ...call, id: `old-${call.id}` })));
        await createRule(server, member.api_key, projectId, queueId, { filter });
        await createCalls(server, member.api_key, projectId, corpus());
        const queried = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, filter, limit: 100 } });
        expect(queried.status, queried.text).toBe(200);
        const byQuery: string[] = queried.body.calls.map((call: { id: string }) => call.id).sort();
        const newer = byQuery.filter((id) => !id.startsWith('old-'));
        expect(byQuery).toHaveLength(2 * newer.length);
        const byRule = (await queryItems(server, member.api_key, projectId, queueId, { limit: 100 })).map((item) => item.call_id).sort();
        expect(byRule, JSON.stringify(filter)).toEqual(newer);
        const previewed = await preview(server, member.api_key, projectId, queueId, { filter });
        expect(previewed, JSON.stringify(filter)).toMatchObject({ matching_calls: byQuery.length, would_add: byQuery.length - newer.length });
      }),
      { numRuns: RUNS, seed: 20261126 },
    );
  }, 120_000);
});
