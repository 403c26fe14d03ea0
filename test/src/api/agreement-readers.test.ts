import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchCreate, callRefOf, createSpec } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, createCalls, createQueue } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Agreement reads each spec in a worker thread of its own, on a connection of that thread's; on
// an in-memory SQLite database, which no second connection can open, it reads on the event loop
// through the server's own (sql.ts's scopeReader). Both ways give the same answer: Krippendorff's
// published alphas on his data set (see agreement.test.ts), a revised value replaced by the later one.

const RELIABILITY_DATA: (number | null)[][] = [
  [1, 2, 3, 3, 2, 1, 4, 1, 2, null, null, null],
  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, null, 3],
  [null, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, null],
  [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, null],
];
const PUBLISHED = { label: 0.743, rank: 0.815, measure: 0.849 };
const projectId = 'acme/agreement-readers';

type Setup = { server: TestServer; owner: CreatedKeyForTest; queueId: string };

async function queueWithValues(server: TestServer): Promise<Setup> {
  const owner = await createUser(server, { entity: 'acme', role: 'member' });
  const annotators = [];
  for (let i = 0; i < 4; i++) annotators.push(await createUser(server, { entity: 'acme', role: 'member' }));
  const specs = [
    await createSpec(server, owner.api_key, projectId, 'label', { enum: [1, 2, 3, 4, 5] }),
    await createSpec(server, owner.api_key, projectId, 'rank', { type: 'integer', minimum: 1, maximum: 5 }),
    await createSpec(server, owner.api_key, projectId, 'measure', { type: 'number' }),
  ];
  const callIds = await createCalls(server, owner.api_key, projectId, RELIABILITY_DATA[0]!.map((_, unit) => ({ id: `unit-${unit + 1}` })));
  const queueId = await createQueue(server, owner.api_key, projectId, { scorer_refs: specs.map((spec) => spec.ref) });
  expect((await addItems(server, owner.api_key, projectId, queueId, callIds)).added_count).toBe(12);
  const annotation = (spec: { ref: string; name: string }, unit: number, value: number) => ({
    project_id: projectId, svc_ref: callRefOf(projectId, `unit-${unit + 1}`), feedback_type: `svc.annotation.${spec.name}`, annotation_ref: spec.ref, queue_id: queueId, payload: { value },
  });
  // Observer 4 first rates unit 1 otherwise: only the later value counts.
  expect((await batchCreate(server, annotators[3]!.api_key, [annotation(specs[0]!, 0, 5)])).status).toBe(200);
  await new Promise((resolve) => setTimeout(resolve, 5));
  for (const [observer, ratings] of RELIABILITY_DATA.entries()) {
    const batch = ratings.flatMap((value, unit) => (value === null ? [] : specs.map((spec) => annotation(spec, unit, value))));
    const reply = await batchCreate(server, annotators[observer]!.api_key, batch);
    expect(reply.status, reply.text).toBe(200);
  }
  return { server, owner, queueId };
}

async function agreementOf({ server, owner, queueId }: Setup) {
  const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key: owner.api_key, body: { project_id: projectId } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body.agreement as { name: string; alpha: number; items_rated: number; values: number; annotators: string[]; disagreements: { call_id: string }[] }[];
}

describe('agreement read in threads and on the event loop', () => {
  let inThreads: Setup;
  let onLoop: Setup;

  beforeAll(async () => {
    inThreads = await queueWithValues(await startTestServer('sqlite'));
    onLoop = await queueWithValues(await startTestServer('sqlite', {}, { url: 'sqlite::memory:', drop: async () => {} }));
  });
  afterAll(async () => {
    await inThreads?.server.stop();
    await onLoop?.server.stop();
  });

  it('gives the same answer both ways: the published alphas, the same items, values and disagreements', async () => {
    const [threads, loop] = [await agreementOf(inThreads), await agreementOf(onLoop)];
    for (const result of [threads, loop]) {
      expect(result.map((spec) => spec.name)).toEqual(['label', 'rank', 'measure']);
      for (const spec of result) {
        expect(spec.alpha).toBeCloseTo(PUBLISHED[spec.name as keyof typeof PUBLISHED], 3);
        expect(spec).toMatchObject({ items_rated: 12, values: 40 });
      }
    }
    // The two databases' users and ids differ; everything else is the same.
    const comparable = (result: typeof threads) => result.map(({ annotators, ...spec }) => ({ ...spec, annotators: annotators.length, pairs: undefined, disagreements: spec.disagreements.map((d) => d.call_id) }));
    expect(comparable(threads)).toEqual(comparable(loop));
  });
});
