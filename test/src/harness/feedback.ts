import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { rest, type Reply } from './http.ts';

// Small REST helpers for feedback tests. The query helpers assert their own success, so a test
// that uses them to look at storage fails at the step that went wrong.

type Target = { url: string };

export type FeedbackElement = Record<string, unknown>;

export type StoredFeedback = {
  id: string;
  project_id: string;
  svc_ref: string;
  feedback_type: string;
  payload: Record<string, unknown>;
  creator: string | null;
  annotation_ref: string | null;
  runnable_ref: string | null;
  call_ref: string | null;
  trigger_ref: string | null;
  queue_id: string | null;
  svc_user_id: string;
  created_at: string;
};

export const callRefOf = (projectId: string, callId: string) => `svc:///${projectId}/call/${callId}`;
export const objectRefOf = (projectId: string, name: string, digest: string, kind: 'object' | 'op' = 'object') =>
  `svc:///${projectId}/${kind}/${name}:${digest}`;

/** A valid free-form element with a client-chosen id. */
export function freeForm(projectId: string, fields: FeedbackElement = {}): FeedbackElement {
  return {
    project_id: projectId,
    id: randomUUID(),
    svc_ref: callRefOf(projectId, 'call-1'),
    feedback_type: 'comment',
    payload: { text: 'fine' },
    ...fields,
  };
}

export function batchCreate(server: Target, key: string, batch: unknown[], headers?: Record<string, string>): Promise<Reply> {
  return rest(server, 'POST', '/feedback/batch/create', { key, body: { batch }, ...(headers ? { headers } : {}) });
}

/** `POST /feedback/query`, asserting 200; returns `result`. */
export async function queryFeedback(server: Target, key: string, projectId: string, body: Record<string, unknown> = {}): Promise<StoredFeedback[]> {
  const reply = await rest(server, 'POST', '/feedback/query', { key, body: { project_id: projectId, ...body } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body.result as StoredFeedback[];
}

/**
 * Every record of a project (or those matching `filter`), paging through with the largest limit.
 * A filter on more ids than one query takes (1,000) is asked in parts.
 */
export async function allFeedback(server: Target, key: string, projectId: string, filter?: Record<string, unknown>): Promise<StoredFeedback[]> {
  const ids = filter?.ids;
  if (Array.isArray(ids) && ids.length > 1000) {
    const parts: StoredFeedback[] = [];
    for (let i = 0; i < ids.length; i += 1000) parts.push(...(await allFeedback(server, key, projectId, { ...filter, ids: ids.slice(i, i + 1000) })));
    return parts;
  }
  const all: StoredFeedback[] = [];
  for (let offset = 0; ; offset += 10_000) {
    const page = await queryFeedback(server, key, projectId, { ...(filter ? { filter } : {}), limit: 10_000, offset });
    all.push(...page);
    if (page.length < 10_000) return all;
  }
}

/** Creates an annotation spec and returns its ref and digest. */
export async function createSpec(server: Target, key: string, projectId: string, name: string, fieldSchema: Record<string, unknown>) {
  const reply = await rest(server, 'POST', '/annotation_specs', { key, body: { project_id: projectId, name, field_schema: fieldSchema } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body as { ref: string; name: string; digest: string; created_at: string };
}
