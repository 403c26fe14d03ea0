import { expect } from 'vitest';
import { unitOfWork } from '@loupe/server';
import { rest, type Reply } from './http.ts';
import type { TestServer } from './server.ts';

// Small REST helpers for tests of calls, annotation queues and their items. Each one asserts its
// own success, so a test that uses it as set-up fails at the step that went wrong.

type Target = { url: string };

let sequence = 0;
/** An id no other test of this process uses. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${++sequence}`;
}

export type CallInput = {
  id?: string;
  op_name?: string;
  trace_id?: string;
  started_at?: string;
  ended_at?: string | null;
  [field: string]: unknown;
};

/** Stores calls in one batch and returns their ids in input order. */
export async function createCalls(server: Target, key: string, projectId: string, calls: CallInput[]): Promise<string[]> {
  const batch = calls.map((call) => ({ op_name: 'chat', started_at: '2026-01-02T03:04:05.678Z', ...call, project_id: projectId }));
  const reply = await rest(server, 'POST', '/calls/batch/create', { key, body: { batch } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body.res.map((r: { id: string }) => r.id);
}

/** `count` plain calls with unique ids. */
export async function createSomeCalls(server: Target, key: string, projectId: string, count: number): Promise<string[]> {
  return createCalls(server, key, projectId, Array.from({ length: count }, () => ({ id: uniqueId('call') })));
}

export async function createQueue(server: Target, key: string, projectId: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = await rest(server, 'POST', '/annotation_queues', { key, body: { project_id: projectId, name: uniqueId('queue'), ...fields } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body.id as string;
}

export type AddResult = { added_count: number; duplicates: string[]; missing_call_ids: string[] };

export async function addItems(server: Target, key: string, projectId: string, queueId: string, callIds: string[]): Promise<AddResult> {
  const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/items`, { key, body: { project_id: projectId, call_ids: callIds } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body as AddResult;
}

export type Item = {
  id: string;
  queue_id: string;
  call_id: string;
  call_op_name: string;
  call_trace_id: string;
  call_started_at: string;
  annotation_state: string;
  annotator_user_id: string | null;
  added_by: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  position_in_queue: number | null;
  assigned_user_id: string | null;
  annotations_required: number;
  [field: string]: unknown;
};

export async function queryItems(server: Target, key: string, projectId: string, queueId: string, body: Record<string, unknown> = {}): Promise<Item[]> {
  const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/items/query`, { key, body: { project_id: projectId, ...body } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body.items as Item[];
}

/** A queue with one item per given call, in call order; returns the queue id and the items. */
export async function queueWithItems(
  server: Target,
  key: string,
  projectId: string,
  callCount: number,
  fields: Record<string, unknown> = {},
): Promise<{ queueId: string; items: Item[] }> {
  const callIds = await createSomeCalls(server, key, projectId, callCount);
  const queueId = await createQueue(server, key, projectId, fields);
  expect((await addItems(server, key, projectId, queueId, callIds)).added_count).toBe(callCount);
  const items = await queryItems(server, key, projectId, queueId, { limit: Math.max(callCount, 1) });
  expect(items).toHaveLength(callCount);
  return { queueId, items };
}

export function progress(server: Target, key: string, projectId: string, queueId: string, itemId: string, state: unknown): Promise<Reply> {
  return rest(server, 'POST', `/annotation_queues/${queueId}/items/${itemId}/progress`, {
    key,
    body: { project_id: projectId, annotation_state: state },
  });
}

export function claim(server: Target, key: string, projectId: string, queueId: string): Promise<Reply> {
  return rest(server, 'POST', `/annotation_queues/${queueId}/items/claim`, { key, body: { project_id: projectId } });
}

export type QueueStats = {
  queue_id: string;
  total_items: number;
  completed_items: number;
  by_state: { unstarted: number; in_progress: number; completed: number; skipped: number };
  by_annotator: { annotator_user_id: string; in_progress: number; completed: number; skipped: number }[];
  done_items: number;
  by_assignee: { user_id: string; assigned_items: number; done: number; in_progress: number; remaining: number }[];
};

export async function stats(server: Target, key: string, projectId: string, queueId: string): Promise<QueueStats> {
  const reply = await rest(server, 'POST', '/annotation_queues/stats', { key, body: { project_id: projectId, queue_ids: [queueId] } });
  expect(reply.status, reply.text).toBe(200);
  expect(reply.body.stats).toHaveLength(1);
  return reply.body.stats[0] as QueueStats;
}

/**
 * Moves every lease of a queue into the past, straight in the server's database: this simulates
 * the passing of `lease_seconds` without waiting for it.
 */
export async function expireLeases(server: TestServer, queueId: string): Promise<void> {
  const em = unitOfWork(server.server.services.orm);
  const past = em.getPlatform().processDateProperty(new Date(Date.now() - 60_000));
  await em.execute(
    `update annotation_item_progress set lease_expires_at = ? where queue_id = ? and state = 'in_progress'`,
    [past, queueId],
    'run',
  );
}

/** `?project_id=` for GET and DELETE routes. */
export function projectQuery(projectId: string): string {
  return `?project_id=${encodeURIComponent(projectId)}`;
}

export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
