import { createUserViaCli } from '../harness/child-server.ts';
import { insertAnnotators } from './bench-annotators.ts';
import { call, inParallel } from './bench-rest.ts';
import { addItems, createCalls, createQueue, type Owner } from './queue-fixture.ts';

// The queue the agreement benchmark reads: ITEMS items, ANNOTATORS annotators, two scorer specs
// (one nominal enum, one integer scale), every value sent as annotation feedback naming the queue
// through Loupe's own feedback route. The values are mostly the same across annotators, as in a
// real queue; the last annotator skips some items, and the first changed its mind on some (an
// earlier value, then the one that counts), so the latest-value rule has something to do.

export const ITEMS = 10_000;
export const ANNOTATORS = 3;
/** The last annotator gives no value to every SKIP_EVERY-th item. */
const SKIP_EVERY = 10;
/** The first annotator first gives another value to every REVISE_EVERY-th item. */
const REVISE_EVERY = 7;
const BATCH = 10_000;
const LABELS = ['correct', 'partly correct', 'wrong'];

export type AgreementQueue = { owner: Owner; queueId: string; scorerRefs: string[]; annotatorKeys: string[] };

/** A deterministic number in [0, 1) for (item, annotator, salt): the values are the same every run. */
function noise(item: number, annotator: number, salt: number): number {
  let h = (item * 2654435761) ^ (annotator * 40503) ^ (salt * 2246822519);
  h = Math.imul(h ^ (h >>> 15), 2246822507);
  h = Math.imul(h ^ (h >>> 13), 3266489909);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

/** Annotator `a`'s value for item `i`: the item's "true" value most of the time, a neighbour otherwise. */
function label(i: number, a: number): string {
  const truth = Math.floor(noise(i, 0, 1) * LABELS.length);
  return LABELS[noise(i, a + 1, 2) < 0.8 ? truth : (truth + 1) % LABELS.length]!;
}
function score(i: number, a: number): number {
  const truth = 1 + Math.floor(noise(i, 0, 3) * 5);
  const r = noise(i, a + 1, 4);
  return Math.min(5, Math.max(1, r < 0.7 ? truth : r < 0.85 ? truth + 1 : truth - 1));
}

export async function buildAgreementQueue(url: string, databaseUrl: string): Promise<AgreementQueue> {
  const created = await createUserViaCli(databaseUrl, { entity: 'bench', role: 'member', username: 'bench-owner' });
  const owner: Owner = { url, key: created.api_key, projectId: 'bench/agreement' };
  const specs = [
    await call<{ ref: string; name: string }>(url, 'POST', '/annotation_specs', owner.key, { project_id: owner.projectId, name: 'verdict', field_schema: { enum: LABELS } }),
    await call<{ ref: string; name: string }>(url, 'POST', '/annotation_specs', owner.key, {
      project_id: owner.projectId,
      name: 'helpfulness',
      field_schema: { type: 'integer', minimum: 1, maximum: 5 },
    }),
  ];
  const callIds = await createCalls(owner, 'call', ITEMS);
  const queueId = await createQueue(owner, 'agreement', { scorer_refs: specs.map((s) => s.ref) });
  await addItems(owner, queueId, callIds);
  const annotators = await insertAnnotators(databaseUrl, 'bench', 'agreement-annotator', 0, ANNOTATORS);

  const element = (spec: { ref: string; name: string }, i: number, value: unknown) => ({
    project_id: owner.projectId,
    svc_ref: `svc:///${owner.projectId}/call/${callIds[i]}`,
    feedback_type: `svc.annotation.${spec.name}`,
    annotation_ref: spec.ref,
    queue_id: queueId,
    payload: { value },
  });
  const send = async (key: string, records: unknown[]) => {
    for (let start = 0; start < records.length; start += BATCH) {
      const batch = records.slice(start, start + BATCH);
      const reply = await call<{ res: unknown[] }>(url, 'POST', '/feedback/batch/create', key, { batch });
      if (reply.res.length !== batch.length) throw new Error(`feedback/batch/create stored ${reply.res.length} of ${batch.length}`);
    }
  };
  const indices = Array.from({ length: ITEMS }, (_, i) => i);
  // Earlier values, replaced below by later records of the same annotator.
  const revised = indices.filter((i) => i % REVISE_EVERY === 0);
  await send(annotators[0]!.key, [
    ...revised.map((i) => element(specs[0]!, i, LABELS[(LABELS.indexOf(label(i, 0)) + 1) % LABELS.length])),
    ...revised.map((i) => element(specs[1]!, i, (score(i, 0) % 5) + 1)),
  ]);
  await inParallel(annotators, ANNOTATORS, async (annotator, a) => {
    const rated = a === ANNOTATORS - 1 ? indices.filter((i) => i % SKIP_EVERY !== SKIP_EVERY - 1) : indices;
    await send(annotator.key, [...rated.map((i) => element(specs[0]!, i, label(i, a))), ...rated.map((i) => element(specs[1]!, i, score(i, a)))]);
  });
  return { owner, queueId, scorerRefs: specs.map((s) => s.ref), annotatorKeys: annotators.map((a) => a.key) };
}
