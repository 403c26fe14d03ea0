import { TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { queueWithItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Loupe's bodies are strict JSON through both doors: nothing coerces null → 0, "7" → 7 or
// "false" → true. (The REST adapter of trpc-to-openapi did, by switching a flag inside the zod
// schemas shared with the /trpc door, on first REST use; so each check still runs in the order
// tRPC, REST, tRPC again, REST again, with successful REST calls between.)

const NOT_NUMBERS: unknown[] = [null, '7', 'false', 'true', '', true];
const NOT_BOOLEANS: unknown[] = [null, '7', 'false', 'true', '', 0, 1];

describeEachBackend('strict input through both doors', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  const projectId = 'acme/strict';
  let queueId: string;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    queueId = (await queueWithItems(server, member.api_key, projectId, 3)).queueId;
  });
  afterAll(() => server?.stop());

  type Field = { name: string; values: unknown[]; good: unknown };
  const fields: { itemsQuery: Field[]; create: Field[] } = {
    itemsQuery: [
      { name: 'limit', values: NOT_NUMBERS, good: 7 },
      { name: 'include_position', values: NOT_BOOLEANS, good: true },
    ],
    create: [{ name: 'annotations_per_item', values: NOT_NUMBERS, good: 7 }],
  };

  async function queueCount(): Promise<number> {
    const reply = await rest(server, 'POST', '/annotation_queues/query', { key: member.api_key, body: { project_id: projectId, limit: 10_000 } });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.queues.length;
  }

  async function trpcStatus(call: () => Promise<unknown>): Promise<number> {
    try {
      await call();
      return 200;
    } catch (error) {
      expect(error).toBeInstanceOf(TRPCClientError);
      return (error as TRPCClientError<any>).data?.httpStatus;
    }
  }

  async function viaTrpc(round: string): Promise<void> {
    const api = client(server, member.api_key).annotationQueues;
    for (const { name, values, good } of fields.itemsQuery) {
      for (const value of values) {
        const status = await trpcStatus(() => api.items.query.query({ queue_id: queueId, project_id: projectId, [name]: value } as never));
        expect(status, `${round} tRPC items.query ${name}=${JSON.stringify(value)}`).toBe(400);
      }
      const ok = await api.items.query.query({ queue_id: queueId, project_id: projectId, [name]: good } as never);
      expect(ok.items.length).toBeGreaterThan(0);
    }
    for (const { name, values, good } of fields.create) {
      const before = await queueCount();
      for (const value of values) {
        const status = await trpcStatus(() => api.create.mutate({ project_id: projectId, name: 'q', [name]: value } as never));
        expect(status, `${round} tRPC create ${name}=${JSON.stringify(value)}`).toBe(400);
      }
      expect(await queueCount()).toBe(before);
      const { id } = await api.create.mutate({ project_id: projectId, name: 'q', [name]: good } as never);
      expect((await api.read.query({ queue_id: id, project_id: projectId })).queue.annotations_per_item).toBe(good);
    }
  }

  async function viaRest(round: string): Promise<void> {
    const itemsQuery = (body: Record<string, unknown>) =>
      rest(server, 'POST', `/annotation_queues/${queueId}/items/query`, { key: member.api_key, body: { project_id: projectId, ...body } });
    const create = (body: Record<string, unknown>) => rest(server, 'POST', '/annotation_queues', { key: member.api_key, body: { project_id: projectId, name: 'q', ...body } });
    for (const { name, values, good } of fields.itemsQuery) {
      const ok = await itemsQuery({ [name]: good });
      expect(ok.status, ok.text).toBe(200);
      for (const value of values) {
        const reply = await itemsQuery({ [name]: value });
        expect(reply.status, `${round} REST items/query ${name}=${JSON.stringify(value)}: ${reply.text}`).toBe(400);
        expect(reply.body.code).toBe('BAD_REQUEST');
        expect(reply.body.reason).toContain(name);
      }
    }
    for (const { name, values, good } of fields.create) {
      const ok = await create({ [name]: good });
      expect(ok.status, ok.text).toBe(200);
      const before = await queueCount();
      for (const value of values) {
        const reply = await create({ [name]: value });
        expect(reply.status, `${round} REST create ${name}=${JSON.stringify(value)}: ${reply.text}`).toBe(400);
        expect(reply.body.reason).toContain(name);
      }
      expect(await queueCount()).toBe(before);
    }
  }

  it('refuses null, numeric strings and boolean strings for number and boolean fields: tRPC, REST, tRPC, REST', async () => {
    await viaTrpc('first');
    await viaRest('first');
    await viaTrpc('second');
    await viaRest('second');
  });

  it('keeps the strings of a GET query string as strings of the schema (project_id), unaffected', async () => {
    const reply = await rest(server, 'GET', `/annotation_queues/${queueId}?project_id=${encodeURIComponent(projectId)}`, { key: member.api_key });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.queue.id).toBe(queueId);
  });

  it('refuses a REST body field named toJSON like any unknown field', async () => {
    const reply = await rest(server, 'POST', '/annotation_queues', { key: member.api_key, body: { project_id: projectId, name: 'q2', toJSON: 1 } });
    expect(reply.status, reply.text).toBe(400);
    expect(reply.body.reason).toContain('toJSON');
    const queues = await rest(server, 'POST', '/annotation_queues/query', { key: member.api_key, body: { project_id: projectId } });
    expect(queues.status, queues.text).toBe(200);
    expect(queues.body.queues.map((q: { name: string }) => q.name)).not.toContain('q2');
  });
});
