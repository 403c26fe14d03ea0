import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import express from 'express';

// The yardstick for the model list: a bare Express 5 app that serves the bytes Loupe served, with
// the same headers and the same If-None-Match rule, and does nothing else (no logs, no metrics, no
// request ids). Run as its own process by the benchmark; prints one JSON line with its url.

const PATH = '/inference/router/partner/models';
const body = readFileSync(required('BASELINE_BODY_FILE'));
const headers = JSON.parse(required('BASELINE_HEADERS')) as Record<string, string>;
const etag = headers.etag;
if (!etag) throw new Error('BASELINE_HEADERS has no etag');

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

function matches(header: string | undefined): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get(PATH, (req, res) => {
  for (const [name, value] of Object.entries(headers)) if (name !== 'content-type') res.setHeader(name, value);
  if (matches(req.headers['if-none-match'])) {
    res.status(304).end();
    return;
  }
  res.setHeader('content-type', headers['content-type'] ?? 'application/json; charset=utf-8');
  res.setHeader('content-length', body.length);
  res.status(200).end(body);
});

const server = app.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ msg: 'baseline listening', url: `http://127.0.0.1:${port}` }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
