import type { LoupeClient } from '@loupe/client';
import type { RouterInputs } from '@loupe/server/router';

// A queue as people meet it: support-chat calls (a system prompt, a user's question, the
// assistant's Markdown answer, the model in the attributes) and a three-field rubric, set up
// through the typed client only, so that the web benchmark, the page tests and the README's
// screenshot all show the same realistic work. Everything in it is deterministic.

type CallCreate = Omit<RouterInputs['calls']['batchCreate']['batch'][number], 'project_id'>;

/** The rubric, in the queue's order; each field takes one digit key. */
export const RUBRIC = [
  {
    name: 'helpfulness',
    description: 'How far the answer solves the customer’s problem: 1 not at all, 5 completely.',
    field_schema: { type: 'integer', minimum: 1, maximum: 5 },
  },
  { name: 'correct', description: 'Every fact and step in the answer is right.', field_schema: { type: 'boolean' } },
  { name: 'tone', description: 'How the answer sounds to the customer.', field_schema: { enum: ['friendly', 'neutral', 'curt'] } },
] as const;

const SYSTEM = 'You are the support assistant of Northwind Outfitters. Answer briefly, cite the help-centre article you used, and never promise refunds.';

const CONVERSATIONS: { question: string; answer: string }[] = [
  {
    question: 'My order #48213 arrived with a torn tent fly. Can I get a replacement before my trip on Friday?',
    answer:
      'Sorry about the torn fly! You can get a replacement part quickly:\n\n1. Open **Orders → #48213** and choose *Report a damaged item*.\n2. Pick **Replacement part** and attach a photo of the tear.\n3. Select **Express shipping** — it is free for damaged items and arrives in 1–2 business days.\n\nSee [Damaged items](https://help.example.com/damaged-items) for details.',
  },
  {
    question: 'What is the difference between the Ridge 30 and the Ridge 45 backpacks? I mostly do day hikes.',
    answer:
      'Both share the same frame and rain cover. The differences:\n\n- **Volume:** 30 l against 45 l\n- **Weight:** 1.1 kg against 1.5 kg\n- **Hip-belt pockets:** one against two\n\nFor day hikes the **Ridge 30** is the better fit. Source: [Ridge series guide](https://help.example.com/ridge).',
  },
  {
    question: 'how do i wash my down jacket without ruining it',
    answer:
      'Use a front-loading machine on a **gentle, 30 °C** cycle with a down-specific detergent, then tumble dry on *low* with two clean tennis balls until no clumps remain (about 2–3 hours). Never dry-clean it. See [Caring for down](https://help.example.com/down-care).',
  },
  {
    question: 'I was charged twice for the same order. Please fix this now.',
    answer:
      'I can see two authorisations on your card for order #50177, but only one was captured; the other is a **pending hold** that your bank releases within 5 business days. Nothing else is needed from you. More in [Pending charges](https://help.example.com/pending-charges).',
  },
  {
    question: 'Do your hiking boots run small? I am a 43 in most brands.',
    answer:
      'Our boots are true to size, but if you are between sizes or wear thick socks, go **half a size up** (43.5). You can exchange unworn boots for free within 60 days: [Size guide](https://help.example.com/boot-sizes).',
  },
];

/** The n-th support call, recorded one minute after the previous one. */
export function supportCall(n: number, id?: string): CallCreate {
  const { question, answer } = CONVERSATIONS[n % CONVERSATIONS.length]!;
  const started = Date.parse('2026-11-20T09:00:00.000Z') + n * 60_000;
  return {
    ...(id ? { id } : {}),
    op_name: 'support-chat',
    started_at: new Date(started).toISOString(),
    ended_at: new Date(started + 1_800 + (n % 7) * 310).toISOString(),
    inputs: {
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: question },
      ],
    },
    output: { role: 'assistant', content: answer },
    attributes: { model: 'gpt-4.1-mini', temperature: 0.2, customer_tier: n % 3 ? 'standard' : 'plus' },
  };
}

export type AnnotatingQueue = { queueId: string; callIds: string[]; specRefs: string[] };

/** Stores the rubric's specs (same content, same refs: safe to repeat in a project). */
export async function createRubric(client: LoupeClient, projectId: string): Promise<string[]> {
  const refs: string[] = [];
  for (const spec of RUBRIC) refs.push((await client.annotationSpecs.create.mutate({ project_id: projectId, ...spec })).ref);
  return refs;
}

/** `items` support calls and a queue holding one item per call, in call order, with the rubric. */
export async function createAnnotatingQueue(
  client: LoupeClient,
  projectId: string,
  items: number,
  queue: { name: string; description?: string; lease_seconds?: number; annotations_per_item?: number },
): Promise<AnnotatingQueue> {
  const specRefs = await createRubric(client, projectId);
  const callIds: string[] = [];
  for (let from = 0; from < items; from += 500) {
    const batch = Array.from({ length: Math.min(500, items - from) }, (_, i) => supportCall(from + i));
    callIds.push(...(await client.calls.batchCreate.mutate({ batch: batch.map((call) => ({ ...call, project_id: projectId })) })).res.map((r) => r.id));
  }
  const { id: queueId } = await client.annotationQueues.create.mutate({ project_id: projectId, scorer_refs: specRefs, ...queue });
  for (let from = 0; from < callIds.length; from += 1000) {
    await client.annotationQueues.items.add.mutate({ project_id: projectId, queue_id: queueId, call_ids: callIds.slice(from, from + 1000) });
  }
  return { queueId, callIds, specRefs };
}

/**
 * Annotates the next `count` items the caller can claim as the web page would: the rubric's
 * values as feedback naming the queue, then the item completed. `values(n)` gives the n-th item's
 * values in rubric order.
 */
export async function annotateThroughApi(
  client: LoupeClient,
  projectId: string,
  queue: AnnotatingQueue,
  count: number,
  values: (n: number) => [number, boolean, string],
): Promise<void> {
  for (let n = 0; n < count; n++) {
    const { item } = await client.annotationQueues.items.claim.mutate({ project_id: projectId, queue_id: queue.queueId });
    if (!item) return;
    const ref = `svc:///${projectId}/call/${item.call_id}`;
    const batch = RUBRIC.map((spec, index) => ({
      project_id: projectId,
      svc_ref: ref,
      call_ref: ref,
      queue_id: queue.queueId,
      feedback_type: `svc.annotation.${spec.name}`,
      annotation_ref: queue.specRefs[index]!,
      payload: { value: values(n)[index]! },
    }));
    await client.feedback.batchCreate.mutate({ batch });
    await client.annotationQueues.items.progress.mutate({ project_id: projectId, queue_id: queue.queueId, item_id: item.id, annotation_state: 'completed' });
  }
}
