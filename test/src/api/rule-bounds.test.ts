import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createQueue, stats } from '../harness/queues.ts';
import { createRule, rulesPath } from '../harness/rules.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// What queue rules may cost (contract 5.10, section 7): the heaviest rules the API accepts, as many
// as a queue may hold, over the largest batch of calls, make a bounded write, and /health answers
// meanwhile; the list of a queue's rules is refused (413) rather than made larger than an answer
// may be.

const RESPONSE_BYTES = 64 * 1024;

describeEachBackend('queue rules within their bounds', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_MAX_RESPONSE_BYTES: String(RESPONSE_BYTES), LOUPE_MAX_RULES_PER_QUEUE: '20' });
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  /** A filter as heavy as the schema allows, but for text: four lists of 1,000 values and 20 attribute conditions. */
  function heaviest(r: number) {
    const values = (tag: string) => [...Array.from({ length: 999 }, (_, i) => `${tag}-${r}-${i}-${'x'.repeat(16)}`), tag === 'op' ? 'chat' : `${tag}-keep`];
    return {
      op_names: values('op'),
      trace_ids: values('trace'),
      call_ids: Array.from({ length: 1000 }, (_, i) => `h${i}`),
      op_name_contains: 'ha',
      attributes: Array.from({ length: 20 }, (_, i) =>
        i % 2 ? { path: `a.b${i % 4}`, op: 'lt', value: 1_000_000 } : { path: `a.s${i % 3}`, op: 'neq', value: `v${i}` },
      ),
    };
  }

  it('twenty of the heaviest rules over a batch of 10,000 calls make a bounded write; /health answers meanwhile', async () => {
    const projectId = 'acme/heavy';
    const queueIds: string[] = [];
    for (let r = 0; r < 20; r++) {
      const queueId = await createQueue(server, member.api_key, projectId);
      queueIds.push(queueId);
      await createRule(server, member.api_key, projectId, queueId, { filter: heaviest(r), sample_rate: 0.5 });
    }
    const batch = Array.from({ length: 10_000 }, (_, i) => ({
      project_id: projectId, id: `h${i}`, op_name: 'chat', trace_id: 'trace-keep', started_at: new Date(Date.UTC(2026, 0, 1) + i).toISOString(),
      attributes: { a: { b1: i, b3: i, s0: 'v', s1: 'w', s2: 'x' } },
    }));
    const health: number[] = [];
    const polls: Promise<unknown>[] = [];
    const timer = setInterval(() => polls.push(fetch(`${server.url}/health`).then((reply) => health.push(reply.status), () => health.push(0))), 250);
    const started = performance.now();
    const reply = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch } }).finally(() => clearInterval(timer));
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(polls);
    expect(reply.status, reply.text).toBe(200);
    // Each rule matched the 1,000 calls of its call_ids and took about half.
    for (const queueId of queueIds) {
      const { total_items: added } = await stats(server, member.api_key, projectId, queueId);
      expect(added).toBeGreaterThan(400);
      expect(added).toBeLessThan(600);
    }
    expect(seconds, `${seconds.toFixed(1)} s`).toBeLessThan(60);
    expect(health.length).toBeGreaterThan(0);
    expect(new Set(health)).toEqual(new Set([200]));
    console.log(`${backend}: 10,000 calls through 20 of the heaviest rules in ${seconds.toFixed(1)} s`);
  }, 180_000);

  it('refuses to list rules whose filters are more than an answer may hold (413), and lists them again once fewer', async () => {
    const projectId = 'acme/large-rules';
    const queueId = await createQueue(server, member.api_key, projectId);
    const made: string[] = [];
    // About 30 kB of filter each: three pass the answer's 64 kB, one does not.
    for (let r = 0; r < 3; r++) made.push((await createRule(server, member.api_key, projectId, queueId, { filter: { op_names: heaviest(r).op_names } })).id);
    const listed = await rest(server, 'POST', `${rulesPath(queueId)}/query`, { key: member.api_key, body: { project_id: projectId } });
    expect(listed.status).toBe(413);
    expect(listed.body.reason).toMatch(/rules asked for take \d+ bytes.*LOUPE_MAX_RESPONSE_BYTES/);
    for (const ruleId of made.slice(1)) {
      expect((await rest(server, 'DELETE', `${rulesPath(queueId)}/${ruleId}?project_id=${projectId}`, { key: member.api_key })).status).toBe(200);
    }
    const again = await rest(server, 'POST', `${rulesPath(queueId)}/query`, { key: member.api_key, body: { project_id: projectId } });
    expect(again.status).toBe(200);
    expect(again.body.rules.map((rule: { id: string }) => rule.id)).toEqual([made[0]]);
  });
});
