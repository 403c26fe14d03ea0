import { expect } from 'vitest';
import { allFeedback, batchCreate, callRefOf, createSpec, type StoredFeedback } from './feedback.ts';
import { createUser, type CreatedKeyForTest } from './http.ts';
import { addItems, createCalls, createQueue, progress, queryItems, type Item } from './queues.ts';
import type { TestServer } from './server.ts';

// A queue whose export names people (issue 25 point 9), written through the API: two annotators
// with values, notes and reactions on two items of a queue that asks for two annotations per item;
// one of them completed the first item. Used by the CLI's and the web app's export tests, which
// compare the exported rows with what the API stored.

export type ExportFixture = {
  projectId: string;
  queueId: string;
  ana: CreatedKeyForTest;
  ben: CreatedKeyForTest;
  callIds: string[];
  items: Item[];
  /** Every feedback record of the queue, as the API answers it. */
  stored: StoredFeedback[];
};

export async function exportFixture(server: TestServer, projectId: string): Promise<ExportFixture> {
  const entity = projectId.split('/')[0]!;
  const suffix = `${process.pid}${Date.now().toString(36)}`;
  const ana = await createUser(server, { entity, role: 'member', username: `ana${suffix}` });
  const ben = await createUser(server, { entity, role: 'member', username: `ben${suffix}` });
  const verdict = await createSpec(server, ana.api_key, projectId, 'verdict', { enum: ['right', 'wrong'] });
  const callIds = await createCalls(server, ana.api_key, projectId, [
    { id: `refund-${suffix}`, op_name: 'refund', inputs: { q: 'Can I get a refund?' }, output: 'Yes, within 30 days.' },
    { id: `shipping-${suffix}`, op_name: 'shipping', inputs: { q: 'Where is my parcel?' }, output: 'On its way.' },
  ]);
  const queueId = await createQueue(server, ana.api_key, projectId, { scorer_refs: [verdict.ref], annotations_per_item: 2 });
  expect((await addItems(server, ana.api_key, projectId, queueId, callIds)).added_count).toBe(2);
  const about = (callId: string) => ({ project_id: projectId, svc_ref: callRefOf(projectId, callId), call_ref: callRefOf(projectId, callId), queue_id: queueId });
  const [refund, shipping] = callIds as [string, string];
  const byAna = await batchCreate(server, ana.api_key, [
    { ...about(refund), feedback_type: 'svc.annotation.verdict', annotation_ref: verdict.ref, payload: { value: 'right' } },
    { ...about(refund), feedback_type: 'svc.note.1', payload: { note: 'Cites the policy, "30 days", correctly.' } },
    { ...about(refund), feedback_type: 'svc.reaction.1', payload: { emoji: '👍' } },
  ]);
  expect(byAna.status, byAna.text).toBe(200);
  const byBen = await batchCreate(server, ben.api_key, [
    { ...about(refund), feedback_type: 'svc.annotation.verdict', annotation_ref: verdict.ref, payload: { value: 'wrong' } },
    // Text that a spreadsheet would run: the formula guard applies to notes too.
    { ...about(shipping), feedback_type: 'svc.note.1', payload: { note: '=HYPERLINK("https://evil.example")' } },
    { ...about(shipping), feedback_type: 'svc.reaction.1', payload: { emoji: '🤔' } },
  ]);
  expect(byBen.status, byBen.text).toBe(200);
  const items = await queryItems(server, ana.api_key, projectId, queueId);
  const done = await progress(server, ana.api_key, projectId, queueId, items[0]!.id, 'completed');
  expect(done.status, done.text).toBe(200);
  return storedNow(server, { projectId, queueId, ana, ben, callIds, items: [], stored: [] });
}

/** The fixture with its items and feedback as the API answers them now (after a test changed them). */
export async function storedNow(server: TestServer, fixture: ExportFixture): Promise<ExportFixture> {
  const { projectId, queueId, ana } = fixture;
  return { ...fixture, items: await queryItems(server, ana.api_key, projectId, queueId), stored: await allFeedback(server, ana.api_key, projectId, { queue_id: queueId }) };
}

/** A row of the queue export as JSON Lines, computed from what the API stored. */
export function expectedJsonRows(fixture: ExportFixture): Record<string, unknown>[] {
  const { ana, ben, stored, items } = fixture;
  const nameOf = (userId: string) => (userId === ana.user_id ? ana.username : userId === ben.user_id ? ben.username : userId);
  return items.map((item) => {
    const about = stored.filter((f) => f.svc_ref === callRefOf(fixture.projectId, item.call_id));
    const values = about.filter((f) => f.feedback_type === 'svc.annotation.verdict');
    const named = new Set([...about.map((f) => f.svc_user_id), ...(item.annotator_user_id ? [item.annotator_user_id] : [])]);
    const counts = new Map<unknown, number>();
    for (const f of values) counts.set(f.payload.value, (counts.get(f.payload.value) ?? 0) + 1);
    const ranked = [...counts].sort((a, b) => b[1] - a[1]);
    return {
      item_id: item.id,
      call_id: item.call_id,
      annotation_state: item.annotation_state,
      annotator: item.annotator_user_id ? nameOf(item.annotator_user_id) : null,
      annotator_user_id: item.annotator_user_id,
      scores: {
        verdict: {
          values: Object.fromEntries(values.map((f) => [nameOf(f.svc_user_id), f.payload.value]).sort(([a], [b]) => (String(a) < String(b) ? -1 : 1))),
          majority: ranked.length === 1 || (ranked.length > 1 && ranked[0]![1] > ranked[1]![1]) ? ranked[0]![0] : null,
        },
      },
      notes: about.filter((f) => f.feedback_type === 'svc.note.1').map((f) => ({ by: nameOf(f.svc_user_id), user_id: f.svc_user_id, note: f.payload.note, created_at: f.created_at })),
      reactions: about
        .filter((f) => f.feedback_type === 'svc.reaction.1')
        .map((f) => ({ by: nameOf(f.svc_user_id), user_id: f.svc_user_id, emoji: f.payload.emoji, alias: f.payload.alias, created_at: f.created_at })),
      annotator_user_ids: Object.fromEntries([...named].map((id) => [nameOf(id), id]).sort(([a], [b]) => (a! < b! ? -1 : 1))),
    };
  });
}
