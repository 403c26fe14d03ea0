import type { CallCreateReq, FeedbackCreateReq, Json } from '@loupe/shared';
import type { Em } from '../db/orm.ts';
import { authenticate } from '../auth/authenticate.ts';
import { Membership, User } from '../db/entities.ts';
import { typedKysely } from '../db/sql.ts';
import type { AuthUser } from '../domain/auth-user.ts';
import { createSpec } from '../domain/annotation-specs.ts';
import { createQueue, queryQueues } from '../domain/annotation-queues.ts';
import { createCalls } from '../domain/calls.ts';
import { createFeedbackBatch } from '../domain/feedback.ts';
import { updateProgress } from '../domain/progress.ts';
import { addItems } from '../domain/queue-items.ts';
import { notifyOnlyPublisher } from '../events/postgres-queue-events.ts';
import { createKey, createUser } from './commands.ts';

// `admin demo`: a data set on which every page of the web app means something. Project
// demo/chatbot holds multi-turn support chats and one agent run (a trace of five calls); a rubric of
// three kinds of fields (a 1-5 scale, yes/no, one of a list); three queues — one worked by three
// annotators who mostly but not always agree (so agreement has figures to show), one of the agent
// run's calls, one not started. Fixed ids and times: running it again stores nothing new (it
// makes a new API key for `demo`, which it prints).

const PROJECT = 'demo/chatbot';
const ENTITY = 'demo';
/** The user the demo's key is for, and two more annotators. */
const DEMO_USER = 'demo';
const ANNOTATORS = ['ana', 'ben'] as const;
const REVIEW_QUEUE = 'Support answers to review';
const AGENT_QUEUE = 'Agent runs';
const TONE_QUEUE = 'Tone check (not started)';
const STARTED = Date.parse('2026-11-02T09:00:00.000Z');

const SYSTEM = 'You are the support assistant of Northwind Outfitters. Answer briefly, cite the help-centre article you used, and never promise refunds.';

/** A support chat: the customer's question, the assistant's first answer, a follow-up, and the answer being reviewed. */
const CHATS: [question: string, first: string, followUp: string, answer: string][] = [
  ['How do I reset my password?', 'Use **Forgot password** on the sign-in page.', 'I never get the email.', 'Check your spam folder first. If it is not there, the address on your account may be old: open [Account help](https://help.example.com/account) and choose *Change e-mail* — we verify you by your last order number.'],
  ['What are your opening hours?', 'Our stores open 9:00–18:00, Monday to Saturday.', 'And on public holidays?', 'Stores are closed on public holidays; the online shop and this chat stay open. See [Store hours](https://help.example.com/hours).'],
  ['Can I change my delivery address after ordering?', 'Yes, while the order is not yet packed.', 'It says "packed" already.', 'Then the address can no longer be changed, but you can **redirect the parcel** with the carrier once it ships: the tracking e-mail has a *Change delivery* link.'],
  ['Do you ship to Norway?', 'Yes, we ship to Norway.', 'Do I pay customs?', 'Orders to Norway are shipped **duties paid** above 3,000 NOK; below that, the carrier collects VAT on delivery. Details: [Shipping outside the EU](https://help.example.com/non-eu).'],
  ['Why was my card declined?', 'Declines usually come from the bank.', 'My bank says everything is fine.', 'Then it was likely our fraud check: it blocks orders whose billing and delivery countries differ. Try PayPal, or call us and we will approve the order by hand.'],
  ['How do I cancel my subscription?', 'Open **Account → Subscriptions**.', 'There is no cancel button.', 'The button only shows on the web, not in the app. On the web: **Account → Subscriptions → Manage → Cancel**. You keep the benefits until the paid period ends.'],
  ['My tent pole snapped on the first trip.', 'Sorry to hear that! Which tent is it?', 'The Ridge 2, bought in May.', 'The Ridge 2 has a two-year warranty on poles: you can **order a replacement section for free** under *Orders → Report a damaged item*. It ships in 1–2 days.'],
  ['Is the Aurora jacket waterproof?', 'It is water-resistant.', 'So not for heavy rain?', 'Right: the Aurora is **water-resistant, not waterproof** (10,000 mm). For heavy rain choose the *Storm* line (20,000 mm, taped seams).'],
  ['Can I return worn boots?', 'Unworn boots can be returned within 60 days.', 'I wore them once indoors.', 'Boots worn indoors on a clean floor still count as unworn. Send them back with the prepaid label from *Orders → Return*; the refund comes within 5 days of arrival.'],
  ['Where is my order #51920?', 'Let me check… it left our warehouse yesterday.', 'When will it arrive?', 'It is with the carrier and due **Thursday**. I cannot promise the exact time; the tracking link in your e-mail updates hourly.'],
  ['Do you price match?', 'We match prices of some retailers.', 'Amazon has it 20 € cheaper.', 'We do not match marketplace sellers, only the retailers listed in [Price match](https://help.example.com/price-match). Amazon itself (not its sellers) qualifies: send us the link.'],
  ['How warm is the Polar sleeping bag?', 'It is rated to −10 °C.', 'Comfort or limit?', '−10 °C is its **limit** rating; comfort is −4 °C. For nights near −10 °C take the *Polar Plus* (comfort −9 °C).'],
];

/** One trace of an agent answering a customer: a root run, its planning, a tool call that fails once, the retry, the answer. */
const AGENT_TRACE = 'demo-trace-agent-1';
const AGENT_CALLS: { id: string; op_name: string; offsetMs: number; durationMs: number; inputs: Record<string, Json>; output: Json; attributes: Record<string, Json>; exception?: string }[] = [
  { id: 'demo-agent-run', op_name: 'agent.run', offsetMs: 0, durationMs: 6200, inputs: { question: 'Did my order #51920 ship, and can I still add a stove to it?' }, output: { answer: 'Your order shipped yesterday; a stove has to be a new order.' }, attributes: { agent: 'support-agent', steps: 4 } },
  { id: 'demo-agent-plan', op_name: 'llm.plan', offsetMs: 40, durationMs: 1100, inputs: { messages: [{ role: 'system', content: 'Plan the tool calls needed to answer.' }, { role: 'user', content: 'Did my order #51920 ship, and can I still add a stove to it?' }] }, output: { role: 'assistant', content: '1. look up order 51920\n2. answer both questions' }, attributes: { model: 'gpt-5-mini', input_tokens: 212, output_tokens: 31 } },
  { id: 'demo-agent-tool-1', op_name: 'tool.lookup_order', offsetMs: 1200, durationMs: 2000, inputs: { order_id: '51920' }, output: null, attributes: { tool: 'orders-api' }, exception: 'TimeoutError: orders-api did not answer within 2 s' },
  { id: 'demo-agent-tool-2', op_name: 'tool.lookup_order', offsetMs: 3300, durationMs: 400, inputs: { order_id: '51920' }, output: { status: 'shipped', shipped_at: '2026-11-01', carrier: 'PostNord' }, attributes: { tool: 'orders-api', retry: 1 } },
  { id: 'demo-agent-answer', op_name: 'llm.answer', offsetMs: 3800, durationMs: 2300, inputs: { messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Did my order #51920 ship, and can I still add a stove to it?' }, { role: 'tool', content: '{"status":"shipped","shipped_at":"2026-11-01"}' }] }, output: { role: 'assistant', content: 'Your order **shipped yesterday** with PostNord, so nothing can be added to it now; please place a new order for the stove.' }, attributes: { model: 'gpt-5', input_tokens: 402, output_tokens: 48 } },
];

/** The demo's own reads are of its few small rows. */
const DEMO_ANSWER_BYTES = 1024 * 1024;

/**
 * What an annotator gave chat `n` (helpfulness 1-5, correct, tone). The three mostly agree and
 * differ on a few chats, by one step or on the yes/no, as people do.
 */
function valuesOf(annotator: number, n: number): { helpfulness: number; correct: boolean; tone: string } {
  const base = [4, 5, 3, 5, 2, 4, 5, 3, 4, 4, 3, 5][n]!;
  const nudge = (n + annotator) % 4 === 0 ? (annotator === 1 ? -1 : 1) : 0;
  const tones = ['friendly', 'neutral', 'curt'];
  return {
    helpfulness: Math.max(1, Math.min(5, base + nudge)),
    correct: n === 4 ? annotator !== 2 : n === 7 ? annotator === 0 : base >= 4,
    tone: tones[(n + (n % 5 === 3 && annotator === 2 ? 1 : 0)) % 3]!,
  };
}

/** A fixed feedback id per annotator, chat and record: a second run is a retry that stores nothing. */
function feedbackId(annotator: number, n: number, record: number): string {
  return `019a2f00-0000-7000-8${annotator}${record}0-${String(n + 1).padStart(12, '0')}`;
}

/** The user a demo annotator acts as (the data is loaded as them, not through a key). */
async function annotator(em: Em, username: string): Promise<AuthUser> {
  let user = await em.findOne(User, { username });
  if (!user) {
    await createUser(em, username, { entity: ENTITY, role: 'member' });
    user = await em.findOneOrFail(User, { username });
  }
  const memberships = await em.find(Membership, { userId: user.id });
  return { id: user.id, username, keyId: `demo-loader-${username}`, via: 'key', roles: new Map(memberships.map((m) => [m.entity, m.role as 'member'])) };
}

async function queueNamed(em: Em, user: AuthUser, name: string, fields: { scorer_refs: string[]; description: string; annotations_per_item?: number }): Promise<string> {
  const [found] = await queryQueues(em, { req: { project_id: PROJECT, name }, page: { limit: 10, offset: 0, bytes: DEMO_ANSWER_BYTES } });
  if (found && found.name === name) return found.id;
  return (await createQueue(em, { req: { project_id: PROJECT, name, ...fields }, userId: user.id, events: notifyOnlyPublisher })).id;
}

export async function loadDemo(em: Em) {
  const existing = await em.findOne(User, { username: DEMO_USER });
  const key = existing ? await createKey(em, DEMO_USER) : await createUser(em, DEMO_USER, { entity: ENTITY, role: 'admin' });
  const demo = (await authenticate(em, { username: null, key: key.api_key }))!;
  const people = [demo, ...(await Promise.all(ANNOTATORS.map((name) => annotator(em, name))))];

  const chats: CallCreateReq[] = CHATS.map(([question, first, followUp, answer], n) => ({
    project_id: PROJECT,
    id: `demo-chat-${n + 1}`,
    trace_id: `demo-trace-chat-${n + 1}`,
    op_name: 'support_bot.answer',
    started_at: new Date(STARTED + n * 60_000).toISOString(),
    ended_at: new Date(STARTED + n * 60_000 + 1_400 + (n % 5) * 230).toISOString(),
    inputs: {
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: question },
        { role: 'assistant', content: first },
        { role: 'user', content: followUp },
      ],
    },
    output: { role: 'assistant', content: answer },
    attributes: { model: n % 3 === 0 ? 'gpt-5' : 'gpt-5-mini', input_tokens: 180 + n * 7, output_tokens: 40 + n * 3 },
  }));
  const agentStart = STARTED + 3_600_000;
  const agent: CallCreateReq[] = AGENT_CALLS.map((call) => ({
    project_id: PROJECT,
    id: call.id,
    trace_id: AGENT_TRACE,
    op_name: call.op_name,
    started_at: new Date(agentStart + call.offsetMs).toISOString(),
    ended_at: new Date(agentStart + call.offsetMs + call.durationMs).toISOString(),
    inputs: call.inputs,
    output: call.output,
    attributes: call.attributes,
    ...(call.exception ? { exception: call.exception } : {}),
  }));
  await createCalls(em, { userId: demo.id, batch: [...chats, ...agent], events: notifyOnlyPublisher });

  type Field = 'helpfulness' | 'correct' | 'tone';
  const rubric: { name: Field; description: string; field_schema: Record<string, Json> }[] = [
    { name: 'helpfulness', description: 'How far the answer solves the customer’s problem: 1 not at all, 5 completely.', field_schema: { type: 'integer', minimum: 1, maximum: 5 } },
    { name: 'correct', description: 'Every fact and step in the answer is right.', field_schema: { type: 'boolean' } },
    { name: 'tone', description: 'How the answer sounds to the customer.', field_schema: { enum: ['friendly', 'neutral', 'curt'] } },
  ];
  const refs: Record<Field, string> = { helpfulness: '', correct: '', tone: '' };
  for (const spec of rubric) refs[spec.name] = (await createSpec(em, demo.id, { project_id: PROJECT, ...spec })).ref;

  const review = await queueNamed(em, demo, REVIEW_QUEUE, {
    scorer_refs: [refs.helpfulness, refs.correct, refs.tone],
    description: 'Rate the assistant’s last answer to the customer. Three people label each chat, so their agreement can be measured.',
    annotations_per_item: 3,
  });
  const agentQueue = await queueNamed(em, demo, AGENT_QUEUE, { scorer_refs: [refs.correct], description: 'Is each step of the agent run right?' });
  const toneQueue = await queueNamed(em, demo, TONE_QUEUE, { scorer_refs: [refs.tone], description: 'Tone only, for the newest chats.' });
  const add = (queueId: string, calls: readonly CallCreateReq[]) =>
    addItems(em, {
      req: { project_id: PROJECT, queue_id: queueId, call_ids: calls.map((call) => call.id!) },
      userId: demo.id,
      maxCallIds: calls.length,
      events: notifyOnlyPublisher,
    });
  await add(review, chats);
  await add(agentQueue, agent);
  await add(toneQueue, chats.slice(-4));

  // Each annotator labels the first chats of the review queue (the demo user 9, ana 10, ben 8).
  const items = await itemIdsByCall(em, review);
  const done = [9, 10, 8];
  for (const [a, person] of people.entries()) {
    const batch: FeedbackCreateReq[] = [];
    for (let n = 0; n < done[a]!; n++) {
      const values = valuesOf(a, n);
      const about = { project_id: PROJECT, svc_ref: `svc:///${PROJECT}/call/demo-chat-${n + 1}`, call_ref: `svc:///${PROJECT}/call/demo-chat-${n + 1}`, queue_id: review };
      batch.push(
        { ...about, id: feedbackId(a, n, 1), feedback_type: 'svc.annotation.helpfulness', annotation_ref: refs.helpfulness, payload: { value: values.helpfulness } },
        { ...about, id: feedbackId(a, n, 2), feedback_type: 'svc.annotation.correct', annotation_ref: refs.correct, payload: { value: values.correct } },
        { ...about, id: feedbackId(a, n, 3), feedback_type: 'svc.annotation.tone', annotation_ref: refs.tone, payload: { value: values.tone } },
      );
      if (n === 4 && a === 1) batch.push({ ...about, id: feedbackId(a, n, 4), feedback_type: 'svc.note.1', payload: { note: 'The fraud check is not the only cause of a decline; the answer guesses.' } });
      if (n === 6) batch.push({ ...about, id: feedbackId(a, n, 5), feedback_type: 'svc.reaction.1', payload: { emoji: '👍' } });
    }
    await createFeedbackBatch(em, { userId: person.id, batch, maxPayloadBytes: 1024 * 1024, events: notifyOnlyPublisher });
    for (let n = 0; n < done[a]!; n++) {
      const req = { project_id: PROJECT, queue_id: review, item_id: items.get(`demo-chat-${n + 1}`)!, annotation_state: 'completed' as const };
      await updateProgress(em, { userId: person.id, blind: false, req, events: notifyOnlyPublisher });
    }
  }
  return { user_id: key.user_id, username: key.username, api_key: key.api_key, project_id: PROJECT, queue_id: review };
}

/** The items of a queue by their call ids. */
async function itemIdsByCall(em: Em, queueId: string): Promise<Map<string, string>> {
  const rows = await typedKysely(em)
    .selectFrom('annotation_queue_items')
    .select(['id', 'call_id'])
    .where('queue_id', '=', queueId)
    .where('deleted_at', 'is', null)
    .execute();
  return new Map(rows.map((row) => [row.call_id, row.id]));
}
