import { connect } from 'node:net';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { client, createUser, rest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

const MODELS = '/inference/router/partner/models';

/** The value of one sample of the Prometheus text, or undefined when the series is absent. */
function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describeEachBackend('operations', (backend) => {
  let server: TestServer;
  let scraper: { api_key: string };
  /** /metrics needs credentials (contract 3 does not list it as public): any valid key reads it. */
  const metricsText = async () => {
    const reply = await rest(server, 'GET', '/metrics', { key: scraper.api_key });
    expect(reply.status, reply.text).toBe(200);
    return reply.text;
  };
  beforeAll(async () => {
    server = await startTestServer(backend);
    scraper = await createUser(server, { entity: 'ops', role: 'viewer' });
  });
  afterAll(() => server?.stop());

  it('answers /health and /ready without credentials', async () => {
    const health = await rest(server, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
    const ready = await rest(server, 'GET', '/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready' });
  });

  it('refuses /metrics without credentials (401 with the challenge) and serves it with any valid key', async () => {
    const anonymous = await rest(server, 'GET', '/metrics');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="loupe"');
    expect(anonymous.body).toMatchObject({ code: 'UNAUTHORIZED', reason: expect.any(String), request_id: anonymous.headers.get('x-request-id') });
    expect(anonymous.text).not.toContain('loupe_http_requests_total');
    const bearer = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${scraper.api_key}` } });
    expect(bearer.status).toBe(200);
    expect(await bearer.text()).toContain('# TYPE loupe_http_requests_total counter');
  });

  it('counts requests in /metrics by method, route template and status', async () => {
    const modelsSeries = `loupe_http_requests_total{method="GET",route="${MODELS}",status="200"}`;
    const before = sample((await metricsText()), modelsSeries) ?? 0;
    expect((await rest(server, 'GET', MODELS)).status).toBe(200);
    expect((await rest(server, 'GET', MODELS)).status).toBe(200);

    const user = await createUser(server, { entity: 'acme', role: 'member' });
    const callId = `metrics-call-${Date.now()}`;
    const created = await rest(server, 'POST', '/calls/batch/create', {
      key: user.api_key,
      body: { batch: [{ project_id: 'acme/ops', id: callId, op_name: 'chat', started_at: '2026-01-01T00:00:00Z' }] },
    });
    expect(created.status).toBe(200);
    expect((await rest(server, 'GET', `/calls/${callId}?project_id=acme/ops`, { key: user.api_key })).status).toBe(200);
    expect((await rest(server, 'GET', '/calls/no-such-call?project_id=acme/ops', { key: user.api_key })).status).toBe(404);
    await client(server, user.api_key).me.read.query({});

    const reply = await rest(server, 'GET', '/metrics', { key: scraper.api_key });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const metrics = reply.text;
    expect(metrics).toContain('# TYPE loupe_http_requests_total counter');
    expect(sample(metrics, modelsSeries)).toBe(before + 2);
    // Parametrised routes are labelled by their template, never by the id in the path.
    expect(sample(metrics, 'loupe_http_requests_total{method="GET",route="/calls/{call_id}",status="200"}')).toBe(1);
    expect(sample(metrics, 'loupe_http_requests_total{method="GET",route="/calls/{call_id}",status="404"}')).toBe(1);
    expect(sample(metrics, 'loupe_http_requests_total{method="POST",route="/calls/batch/create",status="200"}')).toBe(1);
    // The typed door is labelled by procedure.
    expect(sample(metrics, 'loupe_http_requests_total{method="GET",route="/trpc/me.read",status="200"}')).toBe(1);
    expect(metrics).not.toContain(callId);
    expect(metrics).not.toContain('no-such-call');
    expect(metrics).toMatch(new RegExp(`^loupe_http_request_duration_seconds_bucket\\{le="0\\.005",method="GET",route="${MODELS}",status="200"\\} \\d+$`, 'm'));
    expect(sample(metrics, `loupe_http_request_duration_seconds_count{method="GET",route="${MODELS}",status="200"}`)).toBe(before + 2);
    expect(metrics).toMatch(/^loupe_db_pool_connections\{state="total"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^loupe_process_cpu_seconds_total /m);
  });

  it('serves an OpenAPI document that an independent validator accepts', async () => {
    const reply = await rest(server, 'GET', '/openapi.json');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    const doc = reply.body;
    expect(doc.openapi).toMatch(/^3\.1\./);
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();

    const operations = [
      [MODELS, 'get'],
      ['/me', 'get'],
      ['/calls/batch/create', 'post'],
      ['/calls/query', 'post'],
      ['/calls/{call_id}', 'get'],
    ] as const;
    for (const [path, method] of operations) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    // The validator does not check OpenAPI 3.1 path templates against their parameters; we do.
    for (const [path, item] of Object.entries<Record<string, { parameters?: { name: string; in: string; required?: boolean }[] }>>(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const [method, operation] of Object.entries(item)) {
        const declared = (operation.parameters ?? []).filter((p) => p.in === 'path' && p.required).map((p) => p.name);
        expect(declared.sort(), `${method} ${path}`).toEqual(names.sort());
      }
    }
    // The public route needs nothing; the others name a scheme that the document defines.
    expect(doc.paths[MODELS].get.security ?? doc.security ?? []).toEqual([]);
    const meSecurity: Record<string, unknown>[] = doc.paths['/me'].get.security;
    expect(meSecurity.length).toBeGreaterThan(0);
    for (const requirement of meSecurity) {
      for (const scheme of Object.keys(requirement)) expect(doc.components.securitySchemes[scheme]).toBeDefined();
    }
    expect(Object.values(doc.components.securitySchemes)).toContainEqual(expect.objectContaining({ type: 'http', scheme: 'basic' }));
  });

  it('serves Swagger UI from its own assets, with no CDN', async () => {
    const page = await rest(server, 'GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('src="/docs/swagger-ui-bundle.js"');
    expect(page.text).not.toMatch(/https?:\/\//);

    const bundle = await rest(server, 'GET', '/docs/swagger-ui-bundle.js');
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/^(application|text)\/javascript/);
    expect(bundle.text).toContain('SwaggerUIBundle');
    expect(bundle.text.length).toBeGreaterThan(100_000);

    // Every other asset the page loads is served too, and the page is pointed at our document.
    for (const asset of page.text.match(/(?:src|href)="([^"]+)"/g)!.map((m) => m.slice(m.indexOf('"') + 1, -1))) {
      expect((await rest(server, 'GET', asset)).status, asset).toBe(200);
    }
    expect((await rest(server, 'GET', '/docs/init.js')).text).toContain("'/openapi.json'");
  });

  it('logs one JSON line per request carrying the request id', async () => {
    const reply = await rest(server, 'GET', '/health', { headers: { 'x-request-id': 'test-req-1' } });
    expect(reply.headers.get('x-request-id')).toBe('test-req-1');
    const deadline = Date.now() + 2000;
    let line: Record<string, unknown> | undefined;
    while (!(line = server.logs.find((l) => l.request_id === 'test-req-1' && 'status' in l)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(line).toMatchObject({ request_id: 'test-req-1', method: 'GET', url: '/health', status: 200, duration_ms: expect.any(Number) });
    expect(line!.duration_ms as number).toBeGreaterThanOrEqual(0);
    expect(typeof line!.time).toBe('number');

    // An error response is logged with its status under its own id.
    await rest(server, 'GET', '/me', { headers: { 'x-request-id': 'test-req-2' } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(server.logs.filter((l) => l.request_id === 'test-req-2' && 'status' in l)).toEqual([
      expect.objectContaining({ method: 'GET', url: '/me', status: 401 }),
    ]);
  });

  it('tracks model-list polls answered from kept bytes like any request (id, log line, metric)', async () => {
    const { headers } = await rest(server, 'GET', MODELS); // the kept answer exists from here on
    const polls: { id: string; headers: Record<string, string>; status: number }[] = [
      { id: 'test-poll-200', headers: {}, status: 200 },
      { id: 'test-poll-304', headers: { 'if-none-match': headers.get('etag')! }, status: 304 },
    ];
    const series = (status: number) => `loupe_http_requests_total{method="GET",route="${MODELS}",status="${status}"}`;
    const before = (await metricsText());
    for (const poll of polls) {
      const reply = await rest(server, 'GET', MODELS, { headers: { 'x-request-id': poll.id, ...poll.headers } });
      expect(reply.status).toBe(poll.status);
      expect(reply.headers.get('x-request-id')).toBe(poll.id);
      // A new id when the client sent none.
      expect((await rest(server, 'GET', MODELS, { headers: poll.headers })).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    const deadline = Date.now() + 2000;
    const lines = () => server.logs.filter((l) => String(l.request_id).startsWith('test-poll-') && 'status' in l);
    while (lines().length < polls.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(lines()).toEqual(polls.map((poll) => expect.objectContaining({ request_id: poll.id, method: 'GET', url: MODELS, status: poll.status })));
    const after = (await metricsText());
    for (const status of [200, 304]) expect(sample(after, series(status))).toBe((sample(before, series(status)) ?? 0) + 2);
    // HEAD: the same headers, no body.
    const head = await rest(server, 'HEAD', MODELS, { headers: { 'x-request-id': 'test-poll-head' } });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-request-id')).toBe('test-poll-head');
    expect(head.headers.get('etag')).toBe(headers.get('etag'));
    expect(head.text).toBe('');
  });

  it('logs a request the client abandoned before the answer once, with status 499', async () => {
    // Half a body, then the client goes away: the server never answers this request.
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /feedback/batch/create HTTP/1.1\r\nHost: x\r\nX-Request-Id: test-abandoned\r\nAuthorization: Bearer ${scraper.api_key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"batch":`,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    const deadline = Date.now() + 2000;
    const lines = () => server.logs.filter((l) => l.request_id === 'test-abandoned' && 'status' in l);
    while (lines().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines()).toEqual([expect.objectContaining({ method: 'POST', url: '/feedback/batch/create', status: 499 })]);
    const metrics = (await metricsText());
    expect(sample(metrics, 'loupe_http_requests_total{method="POST",route="/feedback/batch/create",status="499"}')).toBe(1);
  });
});
