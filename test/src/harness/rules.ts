import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { rest, type Reply } from './http.ts';
import { projectQuery } from './queues.ts';

// Helpers for tests of queue rules (contract 5.10). Each asserts its own success.

type Target = { url: string };

export type Rule = {
  id: string;
  queue_id: string;
  name: string;
  trigger: 'call' | 'feedback';
  filter: Record<string, unknown>;
  sample_rate: number;
  max_items_per_day: number | null;
  enabled: boolean;
  created_by: string;
  created_at: string;
  updated_at: string;
  stats: { considered: number; matched: number; sampled_out: number; capped: number; added: number; last_added_at: string | null };
  backfill: null | { since: string; state: 'running' | 'done' | 'failed'; considered: number; added: number; reason: string | null };
};

export const rulesPath = (queueId: string) => `/annotation_queues/${queueId}/rules`;

export function postRule(server: Target, key: string, projectId: string, queueId: string, body: Record<string, unknown>): Promise<Reply> {
  return rest(server, 'POST', rulesPath(queueId), { key, body: { project_id: projectId, name: 'rule', trigger: 'call', filter: {}, ...body } });
}

export async function createRule(server: Target, key: string, projectId: string, queueId: string, body: Record<string, unknown>): Promise<Rule> {
  const reply = await postRule(server, key, projectId, queueId, body);
  expect(reply.status, reply.text).toBe(200);
  return reply.body.rule as Rule;
}

export async function queryRules(server: Target, key: string, projectId: string, queueId: string): Promise<Rule[]> {
  const reply = await rest(server, 'POST', `${rulesPath(queueId)}/query`, { key, body: { project_id: projectId } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body.rules as Rule[];
}

export async function readRule(server: Target, key: string, projectId: string, queueId: string, ruleId: string): Promise<Rule> {
  const rule = (await queryRules(server, key, projectId, queueId)).find((r) => r.id === ruleId);
  expect(rule, `rule ${ruleId}`).toBeDefined();
  return rule!;
}

export function updateRule(server: Target, key: string, projectId: string, queueId: string, ruleId: string, body: Record<string, unknown>): Promise<Reply> {
  return rest(server, 'PUT', `${rulesPath(queueId)}/${ruleId}`, { key, body: { project_id: projectId, ...body } });
}

export function deleteRule(server: Target, key: string, projectId: string, queueId: string, ruleId: string): Promise<Reply> {
  return rest(server, 'DELETE', `${rulesPath(queueId)}/${ruleId}${projectQuery(projectId)}`, { key });
}

export async function preview(server: Target, key: string, projectId: string, queueId: string, body: Record<string, unknown>) {
  const reply = await rest(server, 'POST', `${rulesPath(queueId)}/preview`, { key, body: { project_id: projectId, trigger: 'call', filter: {}, ...body } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body as { matching_calls: number; would_add: number; scanned_calls: number; scan_limit_reached: boolean };
}

/** Polls the rule until its backfill is no longer running (at most `ms`). */
export async function backfillSettled(server: Target, key: string, where: { projectId: string; queueId: string; ruleId: string }, ms = 60_000): Promise<Rule> {
  const deadline = Date.now() + ms;
  for (;;) {
    const rule = await readRule(server, key, where.projectId, where.queueId, where.ruleId);
    if (rule.backfill?.state !== 'running') return rule;
    if (Date.now() > deadline) throw new Error(`backfill still running after ${ms} ms: ${JSON.stringify(rule.backfill)}`);
    await sleep(50);
  }
}

/**
 * The sample choice as the contract's README states it, written here independently of the
 * server: the first 8 bytes of SHA-256 of `<rule id>:<call id>` as an unsigned integer over 2^64,
 * below the rate.
 */
export function referenceSampled(ruleId: string, callId: string, rate: number): boolean {
  const point = Number(createHash('sha256').update(`${ruleId}:${callId}`).digest().readBigUInt64BE(0)) / 2 ** 64;
  return rate >= 1 || point < rate;
}
