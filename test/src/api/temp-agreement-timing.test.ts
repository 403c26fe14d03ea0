import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, callRefOf, createSpec } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, createCalls, createQueue } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const ITEMS = 10_000;
describeEachBackend('TEMP timing', (backend) => {
  let server: TestServer;
  let owner: CreatedKeyForTest;
  const projectId = 'acme/timing';
  let queueId: string;
  beforeAll(async () => {
    server = await startTestServer(backend);
    owner = await createUser(server, { entity: 'acme', role: 'member' });
    const annotators = [];
    for (let a = 0; a < 3; a++) annotators.push(await createUser(server, { entity: 'acme', role: 'member' }));
    const specs = [await createSpec(server, owner.api_key, projectId, 'verdict', { enum: ['a', 'b', 'c'] }), await createSpec(server, owner.api_key, projectId, 'score', { type: 'integer' })];
    const callIds: string[] = [];
    for (let s = 0; s < ITEMS; s += 5000) callIds.push(...(await createCalls(server, owner.api_key, projectId, Array.from({ length: 5000 }, (_, i) => ({ id: `c${s + i}` })))));
    queueId = await createQueue(server, owner.api_key, projectId, { scorer_refs: specs.map((s) => s.ref) });
    for (let s = 0; s < ITEMS; s += 5000) await addItems(server, owner.api_key, projectId, queueId, callIds.slice(s, s + 5000));
    for (const [a, annotator] of annotators.entries()) {
      for (const [k, spec] of specs.entries()) {
        const batch = callIds.map((callId, i) => ({ project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: `svc.annotation.${spec.name}`, annotation_ref: spec.ref, queue_id: queueId, payload: { value: k === 0 ? ['a', 'b', 'c'][(i * 7 + a) % 3] : ((i * 3 + a) % 5) + 1 } }));
        expect((await batchCreate(server, annotator.api_key, batch)).status).toBe(200);
      }
    }
  }, 300_000);
  afterAll(() => server?.stop());
  it('TEMP times', async () => {
    const times: number[] = [];
    for (let i = 0; i < 12; i++) {
      const t = performance.now();
      const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key: owner.api_key, body: { project_id: projectId } });
      times.push(Math.round(performance.now() - t));
      expect(reply.status, reply.text).toBe(200);
    }
    times.sort((a, b) => a - b);
    console.log('TEMPTIMES', backend, JSON.stringify(times));
  }, 300_000);
});
