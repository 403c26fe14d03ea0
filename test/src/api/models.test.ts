import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { client, rest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const PATH = '/inference/router/partner/models';
const CATALOG_FILE = fileURLToPath(new URL('../../../server/src/catalog/default-models.json', import.meta.url));
const catalogText = readFileSync(CATALOG_FILE, 'utf8');

type Model = {
  id: string;
  quantization: string;
  input_modalities: string[];
  output_modalities: string[];
  supported_features: string[];
};
const catalog: Model[] = JSON.parse(catalogText).data;

// Every value the contract allows for each filter, and how each one narrows the catalog.
const FILTERS: Record<string, { values: string[]; keep: (model: Model, value: string) => boolean }> = {
  input_modality: { values: ['text', 'image', 'file', 'audio', 'video'], keep: (m, v) => m.input_modalities.includes(v) },
  output_modality: { values: ['text', 'image', 'embeddings', 'audio', 'video'], keep: (m, v) => m.output_modalities.includes(v) },
  feature: { values: ['tools', 'json_mode', 'structured_outputs', 'web_search', 'reasoning'], keep: (m, v) => m.supported_features.includes(v) },
  quantization: { values: ['int4', 'int8', 'fp4', 'fp6', 'fp8', 'fp16', 'bf16', 'fp32'], keep: (m, v) => m.quantization === v },
};

function expected(query: Record<string, string>): Model[] {
  return catalog.filter((model) => Object.entries(query).every(([name, value]) => FILTERS[name]!.keep(model, value)));
}

describeEachBackend('model list', (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.stop());

  it('serves the catalog file without credentials, with caching and CORS headers', async () => {
    expect(catalog.length).toBeGreaterThan(3);
    const reply = await rest(server, 'GET', PATH);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(reply.body).toEqual({ data: catalog });
    expect(reply.headers.get('etag')).toMatch(/^"[^"]+"$/);
    expect(reply.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
    expect(reply.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('answers If-None-Match with the current ETag with 304 and no body', async () => {
    const first = await rest(server, 'GET', PATH);
    const etag = first.headers.get('etag')!;
    const again = await rest(server, 'GET', PATH);
    expect(again.headers.get('etag')).toBe(etag);

    const notModified = await rest(server, 'GET', PATH, { headers: { 'if-none-match': etag } });
    expect(notModified.status).toBe(304);
    expect(notModified.text).toBe('');
    expect(notModified.headers.get('etag')).toBe(etag);
    expect(notModified.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
    // One of a list matches too.
    expect((await rest(server, 'GET', PATH, { headers: { 'if-none-match': `"other", ${etag}` } })).status).toBe(304);

    const stale = await rest(server, 'GET', PATH, { headers: { 'if-none-match': '"not-the-etag"' } });
    expect(stale.status).toBe(200);
    expect(stale.body).toEqual({ data: catalog });
  });

  it('narrows the list by each filter value', async () => {
    for (const [name, { values }] of Object.entries(FILTERS)) {
      for (const value of values) {
        const reply = await rest(server, 'GET', `${PATH}?${name}=${value}`);
        expect(reply.status, `${name}=${value}`).toBe(200);
        expect(reply.body.data.map((m: Model) => m.id), `${name}=${value}`).toEqual(expected({ [name]: value }).map((m) => m.id));
      }
    }
    // The default catalog makes these filters meaningful: some values keep a strict subset.
    expect(expected({ input_modality: 'image' }).length).toBeGreaterThan(0);
    expect(expected({ input_modality: 'image' }).length).toBeLessThan(catalog.length);
  });

  it('combines filters, and a filtered answer has its own ETag', async () => {
    const combos: Record<string, string>[] = [
      { feature: 'tools', quantization: 'fp8' },
      { input_modality: 'image', feature: 'structured_outputs' },
      { input_modality: 'text', output_modality: 'text', feature: 'reasoning', quantization: 'bf16' },
      { output_modality: 'embeddings', feature: 'tools' },
    ];
    const all = await rest(server, 'GET', PATH);
    for (const query of combos) {
      const reply = await rest(server, 'GET', `${PATH}?${new URLSearchParams(query)}`);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ data: expected(query) });
      expect(reply.headers.get('etag')).toMatch(/^"[^"]+"$/);
      expect(reply.headers.get('etag')).not.toBe(all.headers.get('etag'));
    }
    expect(expected(combos[0]!).length).toBeGreaterThan(0);
  });

  it('ignores unknown query parameters', async () => {
    const plain = await rest(server, 'GET', PATH);
    const extra = await rest(server, 'GET', `${PATH}?limit=1&page=2&foo=bar&Feature=tools`);
    expect(extra.status).toBe(200);
    expect(extra.text).toBe(plain.text);
    expect(extra.headers.get('etag')).toBe(plain.headers.get('etag'));
  });

  it('reads an empty filter value as no filter, with the same caching headers', async () => {
    const fp8 = await rest(server, 'GET', `${PATH}?quantization=fp8`);
    const withEmpty = await rest(server, 'GET', `${PATH}?feature=&quantization=fp8&input_modality=`);
    expect(withEmpty.status).toBe(200);
    expect(withEmpty.body).toEqual({ data: expected({ quantization: 'fp8' }) });
    expect(withEmpty.headers.get('etag')).toBe(fp8.headers.get('etag'));
    expect(withEmpty.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=300');
  });

  it('answers an invalid filter value with 400 JSON', async () => {
    const reply = await rest(server, 'GET', `${PATH}?quantization=int3`);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ code: 'BAD_REQUEST', reason: expect.stringContaining('quantization'), request_id: expect.any(String) });
    expect(reply.body.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: ['quantization'] })]));
    expect((await rest(server, 'GET', `${PATH}?feature=teleport`)).status).toBe(400);
  });

  it('serves the same data through the tRPC client', async () => {
    const models = client(server).models.list;
    expect(await models.query({})).toEqual({ data: catalog });
    expect(await models.query({ feature: 'tools', quantization: 'fp8' })).toEqual({ data: expected({ feature: 'tools', quantization: 'fp8' }) });
  });

  it('answers a CORS preflight', async () => {
    const reply = await rest(server, 'OPTIONS', PATH, {
      headers: { origin: 'https://router.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match' },
    });
    expect(reply.status).toBeLessThan(300);
    expect(reply.headers.get('access-control-allow-origin')).toBe('*');
    expect(reply.headers.get('access-control-allow-methods')).toMatch(/\bGET\b/);
    expect(reply.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('if-none-match');
  });
});

// The catalog lives in a file, not in the database, so one backend is enough here.
describe('model catalog reload', () => {
  let dir: string;
  let file: string;
  let server: TestServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-catalog-'));
    file = join(dir, 'models.json');
    writeFileSync(file, catalogText);
    server = await startTestServer('sqlite', { LOUPE_MODEL_CATALOG: file, LOUPE_CATALOG_WATCH: 'true' });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Replaces the file in one step, as editors and deploy tools do, so no half-written file is read. */
  function replaceCatalog(text: string): void {
    const temporary = join(dir, `next-${Date.now()}.tmp`);
    writeFileSync(temporary, text);
    renameSync(temporary, file);
  }

  async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('serves a changed file, keeps the last good catalog when the file turns invalid, and logs why', async () => {
    const before = await rest(server, 'GET', PATH);
    expect(before.body).toEqual({ data: catalog });
    const removed = catalog[1]!.id;
    const shorter = catalog.filter((model) => model.id !== removed);

    replaceCatalog(JSON.stringify({ data: shorter }, null, 2));
    const changed = await until(async () => {
      const reply = await rest(server, 'GET', PATH);
      return reply.body.data.length === shorter.length ? reply : undefined;
    }, 'the reloaded catalog');
    expect(changed.body).toEqual({ data: shorter });
    expect(changed.headers.get('etag')).not.toBe(before.headers.get('etag'));
    // The old ETag no longer matches.
    expect((await rest(server, 'GET', PATH, { headers: { 'if-none-match': before.headers.get('etag')! } })).status).toBe(200);

    const logsBefore = server.logs.length;
    const broken = structuredClone(shorter) as Record<string, unknown>[];
    broken[0]!.quantization = 'int3';
    replaceCatalog(JSON.stringify({ data: broken }));
    const failure = await until(
      () => server.logs.slice(logsBefore).find((line) => /reload failed/i.test(String(line.msg))),
      'a reload-failure log line',
    );
    expect(String(failure.err)).toContain('quantization');
    const after = await rest(server, 'GET', PATH);
    expect(after.body).toEqual({ data: shorter });
    expect(after.headers.get('etag')).toBe(changed.headers.get('etag'));

    // What SIGHUP calls: false while the file is invalid, true once it is good again.
    expect(server.server.services.catalog.reload()).toBe(false);
    expect((await rest(server, 'GET', PATH)).body).toEqual({ data: shorter });
    replaceCatalog(catalogText);
    expect(server.server.services.catalog.reload()).toBe(true);
    const restored = await rest(server, 'GET', PATH);
    expect(restored.body).toEqual({ data: catalog });
    expect(restored.headers.get('etag')).toBe(before.headers.get('etag'));
  });
});
