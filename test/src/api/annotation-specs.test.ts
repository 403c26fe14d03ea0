import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { TIMESTAMP } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const SCORE = { type: 'integer', minimum: 1, maximum: 5 };

describeEachBackend('annotation specs', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
  });
  afterAll(() => server?.stop());

  const createSpec = (body: Record<string, unknown>, key = member.api_key) => rest(server, 'POST', '/annotation_specs', { key, body });
  const querySpecs = (body: Record<string, unknown>, key = member.api_key) => rest(server, 'POST', '/annotation_specs/query', { key, body });

  async function specsOf(projectId: string, filter: Record<string, unknown> = {}): Promise<any[]> {
    const reply = await querySpecs({ project_id: projectId, ...filter });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.specs;
  }

  it('creates a spec and answers its object ref svc:///<entity>/<project>/object/<name>:<digest>', async () => {
    const reply = await createSpec({ project_id: 'acme/specs', name: 'helpfulness', description: 'How helpful, 1-5', field_schema: SCORE });
    expect(reply.status, reply.text).toBe(200);
    const { ref, name, digest, created_at } = reply.body;
    expect(Object.keys(reply.body).sort()).toEqual(['created_at', 'digest', 'name', 'ref']);
    expect(name).toBe('helpfulness');
    expect(digest).toMatch(/^[^/:]+$/);
    expect(digest.length).toBeGreaterThan(0);
    expect(ref).toBe(`svc:///acme/specs/object/helpfulness:${digest}`);
    expect(created_at).toMatch(TIMESTAMP);
    expect(await specsOf('acme/specs')).toEqual([
      {
        ref,
        project_id: 'acme/specs',
        name: 'helpfulness',
        digest,
        description: 'How helpful, 1-5',
        field_schema: SCORE,
        created_at,
        created_by: member.user_id,
      },
    ]);
  });

  it('gives the same content the same digest and ref, keeping the first created_at', async () => {
    const body = { project_id: 'acme/same', name: 'tone', field_schema: { type: 'string', enum: ['calm', 'rude'] } };
    const first = await createSpec(body);
    expect(first.status, first.text).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Key order does not change the content.
    const again = await createSpec({ field_schema: { enum: ['calm', 'rude'], type: 'string' }, name: 'tone', project_id: 'acme/same' });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await specsOf('acme/same')).toHaveLength(1);
  });

  it('gives a different schema (or description) a different digest, and keeps both versions', async () => {
    const projectId = 'acme/versions';
    const v1 = (await createSpec({ project_id: projectId, name: 'score', field_schema: SCORE })).body;
    const v2 = (await createSpec({ project_id: projectId, name: 'score', field_schema: { ...SCORE, maximum: 10 } })).body;
    const v3 = (await createSpec({ project_id: projectId, name: 'score', description: 'other words', field_schema: SCORE })).body;
    expect(new Set([v1.digest, v2.digest, v3.digest]).size).toBe(3);
    expect(v2.ref).toBe(`svc:///${projectId}/object/score:${v2.digest}`);
    expect((await specsOf(projectId)).map((s) => s.ref).sort()).toEqual([v1.ref, v2.ref, v3.ref].sort());
  });

  it('refuses a field_schema that is not valid JSON Schema with a 400 that says why, storing nothing', async () => {
    const projectId = 'acme/invalid';
    const cases: { schema: unknown; says: RegExp }[] = [
      { schema: { type: 'objekt' }, says: /type/ },
      { schema: { type: 'object', propertiez: { a: { type: 'string' } } }, says: /propertiez/ },
      { schema: { type: 'integer', minimum: 'one' }, says: /minimum/ },
    ];
    for (const { schema, says } of cases) {
      const reply = await createSpec({ project_id: projectId, name: 'broken', field_schema: schema });
      expect(reply.status, reply.text).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      expect(reply.body.reason).toMatch(/field_schema/);
      expect(reply.body.reason).toMatch(says);
    }
    // Not an object at all: a schema violation of the body.
    const notObject = await createSpec({ project_id: projectId, name: 'broken', field_schema: 'string' });
    expect(notObject.status).toBe(400);
    expect(notObject.body.reason).toContain('field_schema');
    expect(await specsOf(projectId)).toEqual([]);
  });

  it('refuses a bad name, and a write by a viewer', async () => {
    for (const name of ['', 'has space', 'a/b', 'x:y', 'n'.repeat(129)]) {
      const reply = await createSpec({ project_id: 'acme/names', name, field_schema: SCORE });
      expect(reply.status, name).toBe(400);
      expect(reply.body.reason).toContain('name');
    }
    const byViewer = await createSpec({ project_id: 'acme/names', name: 'ok', field_schema: SCORE }, viewer.api_key);
    expect(byViewer.status).toBe(403);
    expect(await specsOf('acme/names')).toEqual([]);
  });

  it('queries by names and by refs (either matching), a viewer too', async () => {
    const projectId = 'acme/query';
    const a1 = (await createSpec({ project_id: projectId, name: 'alpha', field_schema: SCORE })).body;
    const a2 = (await createSpec({ project_id: projectId, name: 'alpha', field_schema: { type: 'boolean' } })).body;
    const b = (await createSpec({ project_id: projectId, name: 'beta', field_schema: SCORE })).body;
    const c = (await createSpec({ project_id: projectId, name: 'gamma', field_schema: SCORE })).body;
    // The same name in another project is never returned.
    expect((await createSpec({ project_id: 'acme/query-other', name: 'alpha', field_schema: SCORE })).status).toBe(200);

    const refs = async (filter: Record<string, unknown>, key = member.api_key) => {
      const reply = await querySpecs({ project_id: projectId, ...filter }, key);
      expect(reply.status, reply.text).toBe(200);
      return reply.body.specs.map((s: { ref: string }) => s.ref).sort();
    };
    expect(await refs({})).toEqual([a1.ref, a2.ref, b.ref, c.ref].sort());
    expect(await refs({ names: ['alpha'] })).toEqual([a1.ref, a2.ref].sort());
    expect(await refs({ names: ['beta', 'nothing'] })).toEqual([b.ref]);
    expect(await refs({ refs: [a2.ref] })).toEqual([a2.ref]);
    expect(await refs({ refs: [a2.ref, c.ref] })).toEqual([a2.ref, c.ref].sort());
    expect(await refs({ names: ['beta'], refs: [c.ref] })).toEqual([b.ref, c.ref].sort());
    expect(await refs({ refs: [`svc:///${projectId}/object/alpha:nosuchdigest`] })).toEqual([]);
    expect(await refs({ names: [] })).toEqual([]);
    expect(await refs({ refs: [b.ref] }, viewer.api_key)).toEqual([b.ref]);
  });

  it('refuses a ref from another project or a malformed ref in a query with 400 naming it', async () => {
    const projectId = 'acme/badrefs';
    const spec = (await createSpec({ project_id: projectId, name: 'alpha', field_schema: SCORE })).body;
    const other = (await createSpec({ project_id: 'acme/elsewhere', name: 'alpha', field_schema: SCORE })).body;
    const bad = [
      other.ref,
      'http:///acme/badrefs/object/alpha:x',
      `svc:///${projectId}/object/alpha`,
      `svc:///${projectId}/object/alpha:`,
      `svc:///${projectId}/call/some-call`,
      `svc:///${projectId}/thing/alpha:x`,
      'not a ref',
    ];
    for (const ref of bad) {
      const reply = await querySpecs({ project_id: projectId, refs: [spec.ref, ref] });
      expect(reply.status, ref).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      expect(reply.body.reason, ref).toContain('refs[1]');
    }
  });
});
