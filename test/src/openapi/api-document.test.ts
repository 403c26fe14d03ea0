import { readFileSync } from 'node:fs';
import { openApiDocument } from '@loupe/server';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { API_TYPES_FILE, generatedApiTypes } from './api-types.ts';

type Operation = { operationId: string; security?: unknown[]; responses: Record<string, { content?: Record<string, { schema: unknown }> }> };

const document = openApiDocument() as unknown as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, ...op })));
const statusesOf = (operationId: string) => Object.keys(operations.find((o) => o.operationId === operationId)!.responses).map(Number);
/** The operations open to anonymous callers (contract 3). */
const PUBLIC = ['models-list', 'auth-methods', 'auth-signIn', 'auth-acceptInvitation'];

describe('the API document', () => {
  it('passes the recommended rules of an independent linter (Redocly) with no problem', async () => {
    // Loupe states no licence (a private package), so the one rule asking for it is off.
    const config = await createConfig({ extends: ['recommended'], rules: { 'info-license': 'off' } });
    const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it('names its shared schemas: one JsonValue, one Error, nothing anonymous', () => {
    const names = Object.keys(document.components.schemas);
    expect(names).toEqual(expect.arrayContaining(['JsonValue', 'Error']));
    expect(names.filter((n) => n.startsWith('__') || n.startsWith('error.'))).toEqual([]);
    expect(JSON.stringify(document)).not.toContain('__schema');
  });

  it('describes a call\'s parent: Call always carries parent_id (string or null), CallCreateReq may send it', () => {
    type ObjectSchema = { properties: Record<string, { type?: unknown; anyOf?: { type: string }[] }>; required?: string[] };
    const { Call, CallCreateReq } = document.components.schemas as Record<string, ObjectSchema>;
    expect(Call!.required).toContain('parent_id');
    expect(JSON.stringify(Call!.properties.parent_id)).toMatch(/"null"/);
    expect(CallCreateReq!.properties.parent_id).toBeDefined();
    expect(CallCreateReq!.required).not.toContain('parent_id');
  });

  it('gives every error status of every operation the one error schema', () => {
    for (const op of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        expect(response.content?.['application/json']?.schema, `${op.operationId} ${status}`).toEqual({ $ref: '#/components/schemas/Error' });
      }
    }
  });

  it('lists every status each operation can answer', () => {
    for (const op of operations) {
      const statuses = Object.keys(op.responses).map(Number);
      expect(statuses, op.operationId).toEqual(expect.arrayContaining([200, 400, 500]));
      if (!PUBLIC.includes(op.operationId)) expect(statuses, op.operationId).toEqual(expect.arrayContaining([401, 403, 429, 503]));
      if (op.method === 'post' || op.method === 'put') expect(statuses, op.operationId).toEqual(expect.arrayContaining([413, 415, 503]));
    }
    for (const id of ['annotationQueues-items-progress', 'annotationQueues-items-claim', 'annotationQueues-items-add', 'annotationQueues-stats', 'feedback-replace', 'calls-read']) {
      expect(statusesOf(id), id).toContain(404);
    }
    for (const id of ['calls-batchCreate', 'feedback-create', 'feedback-batchCreate', 'feedback-replace']) expect(statusesOf(id), id).toContain(409);
    expect(statusesOf('models-list').sort()).toEqual([200, 304, 400, 500]);
    // The public people operations answer what they check themselves (contract 5.12).
    expect(statusesOf('auth-signIn')).toEqual(expect.arrayContaining([401, 429]));
    expect(statusesOf('auth-acceptInvitation')).toEqual(expect.arrayContaining([403, 409]));
  });

  it('says which operations need credentials, and that the model list, sign-in and accepting an invitation do not', () => {
    for (const op of operations) {
      expect(op.security, op.operationId).toEqual(PUBLIC.includes(op.operationId) ? [] : [{ basicAuth: [] }, { bearerAuth: [] }]);
    }
  });

  it('is what the kept generated client types were made from (npm run api-types -w test rewrites them)', async () => {
    expect(readFileSync(API_TYPES_FILE, 'utf8')).toBe(await generatedApiTypes());
  });
});
