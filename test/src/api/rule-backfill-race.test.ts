import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createQueue, uniqueId } from '../harness/queues.ts';
import { createRule } from '../harness/rules.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// A backfill chunk locks its rule while it reads and adds calls; a calls write that counts a new
// day row of that rule checks the row's foreign key against the rule. With the rule locked for an
// update of its key (FOR UPDATE), the write waited for the chunk while the chunk waited for the
// write's uncommitted day row: a deadlock on PostgreSQL, a 503 to the write. Chunks large enough
// to take a while, and writes during them.

describeEachBackend('rule backfills beside calls writes', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_RULE_BACKFILL_CHUNK: '20000', LOUPE_RULE_BACKFILL_PAUSE_MS: '0' });
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  it('answers every calls write while new capped rules backfill', async () => {
    const projectId = `acme/${uniqueId('backfill-race')}`;
    const call = (id: string) => ({ project_id: projectId, id, op_name: 'chat', started_at: '2026-01-02T03:04:05.678Z' });
    for (let b = 0; b < 10; b++) {
      const reply = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: Array.from({ length: 1000 }, (_, i) => call(`old-${b}-${i}`)) } });
      expect(reply.status, reply.text).toBe(200);
    }
    const replies: { status: number; text: string }[] = [];
    let n = 0;
    for (let round = 0; round < 8; round++) {
      const queueId = await createQueue(server, member.api_key, projectId);
      await createRule(server, member.api_key, projectId, queueId, { trigger: 'call', filter: {}, max_items_per_day: 100000, backfill_since: '2020-01-01T00:00:00.000Z' });
      for (let wave = 0; wave < 6; wave++) {
        replies.push(...(await Promise.all(Array.from({ length: 3 }, () =>
          rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: Array.from({ length: 5 }, () => call(`new-${++n}`)) } })))));
      }
    }
    expect(replies.filter((r) => r.status !== 200).map((r) => r.text)).toEqual([]);
  });
});
