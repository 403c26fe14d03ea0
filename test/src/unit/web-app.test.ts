import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { webApp } from '@loupe/server';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// How /app/ is served, on a small build of its own: the browser tests use the real one.
describe('web app serving', () => {
  const dist = mkdtempSync(join(tmpdir(), 'loupe-web-'));
  const INDEX = '<!doctype html><title>Loupe</title><script type="module" src="/app/assets/main-abc123.js"></script>'.padEnd(800, ' ');
  const SCRIPT = 'console.log("app");'.repeat(100);
  let url: string;
  let close: () => void;
  beforeAll(async () => {
    const app = express();
    app.use(webApp(dist));
    app.use((_req, res) => void res.status(404).json({ code: 'NOT_FOUND' }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => server.close();
  });
  afterAll(() => {
    close?.();
    rmSync(dist, { recursive: true, force: true });
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(url + path, { headers, redirect: 'manual' });

  it('answers 503 with a JSON reason until the app is built, then serves it', async () => {
    const missing = await get('/app/');
    expect(missing.status).toBe(503);
    const body = await missing.json();
    expect(Object.keys(body).sort()).toEqual(['code', 'reason', 'request_id']);
    expect(body.code).toBe('WEB_APP_NOT_BUILT');
    expect(body.reason).toMatch(/npm run build:web/);
    expect(missing.headers.get('content-security-policy')).toMatch(/default-src 'self'/);

    mkdirSync(join(dist, 'assets'));
    writeFileSync(join(dist, 'index.html'), INDEX);
    writeFileSync(join(dist, 'index.html.br'), brotliCompressSync(INDEX));
    writeFileSync(join(dist, 'index.html.gz'), gzipSync(INDEX));
    writeFileSync(join(dist, 'assets/main-abc123.js'), SCRIPT);
    writeFileSync(join(dist, 'assets/main-abc123.js.gz'), gzipSync(SCRIPT));
    writeFileSync(join(dist, 'favicon.svg'), '<svg/>');
    const built = await get('/app/');
    expect(built.status).toBe(200);
    expect(await built.text()).toBe(INDEX);
  });

  it('redirects / and /app to /app/', async () => {
    for (const path of ['/', '/app']) {
      const reply = await get(path);
      expect(reply.status).toBe(302);
      expect(reply.headers.get('location')).toBe('/app/');
    }
  });

  it('caches hashed assets for a year and makes index.html revalidate, with ETags', async () => {
    const asset = await get('/app/assets/main-abc123.js', { 'accept-encoding': 'identity' });
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await asset.text()).toBe(SCRIPT);
    const index = await get('/app/', { 'accept-encoding': 'identity' });
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const etag = index.headers.get('etag')!;
    const again = await get('/app/', { 'accept-encoding': 'identity', 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect((await get('/app/favicon.svg')).headers.get('cache-control')).toBe('no-cache');
  });

  it('sends the precompressed variant the client accepts, best first', async () => {
    // fetch decodes the body it receives: the header says what was sent.
    const br = await get('/app/', { 'accept-encoding': 'gzip, br' });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(br.headers.get('vary')).toBe('Accept-Encoding');
    expect(await br.text()).toBe(INDEX);
    const gzip = await get('/app/', { 'accept-encoding': 'gzip, br;q=0' });
    expect(gzip.headers.get('content-encoding')).toBe('gzip');
    const plain = await get('/app/', { 'accept-encoding': 'identity' });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(await plain.text()).toBe(INDEX);
    // A file with only a gzip variant.
    const script = await get('/app/assets/main-abc123.js', { 'accept-encoding': 'br, gzip' });
    expect(script.headers.get('content-encoding')).toBe('gzip');
    expect(await script.text()).toBe(SCRIPT);
  });

  it('answers index.html for page paths, 404 for missing assets, and never leaves the build', async () => {
    const page = await get('/app/projects/acme/chatbot', { 'accept-encoding': 'identity' });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe(INDEX);
    expect((await get('/app/assets/gone-123.js')).status).toBe(404);
    expect((await get('/app/robots.txt')).status).toBe(404);
    expect((await get('/app/index.html.br')).status).toBe(404);
    expect((await get('/app/%2e%2e/%2e%2e/package.json')).status).toBe(404);
    expect((await get('/app/%E0%A4%A')).status).toBe(404);
    expect((await get('/elsewhere')).status).toBe(404);
  });

  it('puts the security headers on every answer under /app/', async () => {
    for (const path of ['/app/', '/app/assets/main-abc123.js', '/app/missing.png']) {
      const reply = await get(path);
      expect(reply.headers.get('content-security-policy')).toBe(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
      );
      expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
      expect(reply.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });
});
