import type { Em } from '../db/orm.ts';
import { authenticate } from '../auth/authenticate.ts';
import { User } from '../db/entities.ts';
import { createSpec } from '../domain/annotation-specs.ts';
import { createQueue, queryQueues } from '../domain/annotation-queues.ts';
import { createCalls } from '../domain/calls.ts';
import { createFeedbackBatch } from '../domain/feedback.ts';
import { addItems } from '../domain/queue-items.ts';
import { notifyOnlyPublisher } from '../events/postgres-queue-events.ts';
import { createKey, createUser } from './commands.ts';

const DEMO_USER = 'demo';
const DEMO_PROJECT = 'demo/chatbot';
const QUEUE_NAME = 'Support answers to review';

const QUESTIONS = [
  'How do I reset my password?',
  'What are your opening hours?',
  'Can I change my delivery address after ordering?',
  'Do you ship to Norway?',
  'Why was my card declined?',
  'How do I cancel my subscription?',
];

/** The demo's own reads are of its few small rows. */
const DEMO_ANSWER_BYTES = 1024 * 1024;

/**
 * A small data set to try the API with: user `demo` (admin of entity `demo`), and in project
 * `demo/chatbot` six recorded calls, a 1-5 helpfulness rubric, a review queue holding the calls,
 * and two feedback records. Loaded through the same domain functions the API uses.
 */
export async function loadDemo(em: Em) {
  const existing = await em.findOne(User, { username: DEMO_USER });
  const key = existing ? await createKey(em, DEMO_USER) : await createUser(em, DEMO_USER, { entity: 'demo', role: 'admin' });
  const user = (await authenticate(em, { username: null, key: key.api_key }))!;
  // Fixed times and ids make a second `demo` a retry that stores nothing new.
  const started = Date.parse('2026-11-02T09:00:00.000Z');
  const calls = await createCalls(
    em,
    user,
    QUESTIONS.map((question, index) => ({
      project_id: DEMO_PROJECT,
      id: `demo-call-${index + 1}`,
      op_name: 'support_bot.answer',
      started_at: new Date(started + index * 60_000).toISOString(),
      ended_at: new Date(started + index * 60_000 + 1_500).toISOString(),
      inputs: { question },
      output: { answer: `(recorded answer to: ${question})` },
    })),
  );
  const spec = await createSpec(em, user, {
    project_id: DEMO_PROJECT,
    name: 'helpfulness',
    description: 'How helpful was the answer, from 1 (not at all) to 5 (fully)?',
    field_schema: { type: 'integer', minimum: 1, maximum: 5 },
  });
  const [found] = await queryQueues(em, user, { project_id: DEMO_PROJECT, name: QUEUE_NAME }, { limit: 1, offset: 0, cursor: undefined, bytes: DEMO_ANSWER_BYTES });
  const queue = found ?? (await createQueue(em, user, { project_id: DEMO_PROJECT, name: QUEUE_NAME, scorer_refs: [spec.ref] }, notifyOnlyPublisher));
  await addItems(em, user, { project_id: DEMO_PROJECT, queue_id: queue.id, call_ids: calls.map((call) => call.id) }, calls.length, notifyOnlyPublisher);
  await createFeedbackBatch(
    em,
    user,
    [
      {
        id: '019a2f00-0000-7000-8000-000000000001',
        project_id: DEMO_PROJECT,
        svc_ref: `svc:///${DEMO_PROJECT}/call/demo-call-1`,
        feedback_type: 'svc.reaction.1',
        payload: { emoji: '👍' },
      },
      {
        id: '019a2f00-0000-7000-8000-000000000002',
        project_id: DEMO_PROJECT,
        svc_ref: `svc:///${DEMO_PROJECT}/call/demo-call-1`,
        feedback_type: 'svc.annotation.helpfulness',
        annotation_ref: spec.ref,
        payload: { value: 4 },
        queue_id: queue.id,
      },
    ],
    1024 * 1024,
  );
  return { user_id: key.user_id, username: key.username, api_key: key.api_key, project_id: DEMO_PROJECT, queue_id: queue.id };
}
