import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NextFunction, Request, Response } from 'express';
import { sendError } from './errors.ts';
import { setPageHeaders } from './page-headers.ts';

/** Where `npm run build -w @loupe/web` writes the web app. */
export const WEB_DIST = fileURLToPath(new URL('../../../clients/web/dist/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** Precompressed variants written beside a file at build time, best first. */
const ENCODINGS = [
  { name: 'br', suffix: '.br' },
  { name: 'gzip', suffix: '.gz' },
] as const;

type Variant = { body: Buffer; etag: string };
type StaticFile = { type: string; cacheControl: string; identity: Variant; encoded: Map<string, Variant> };

function variant(body: Buffer, tag: string): Variant {
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}${tag}"` };
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The built app, read once into memory (a few hundred kB): `/`-separated path under dist → file. */
function loadDist(dist: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  const paths = new Set(listFiles(dist));
  for (const path of paths) {
    if (ENCODINGS.some(({ suffix }) => path.endsWith(suffix))) continue;
    const name = relative(dist, path).split(sep).join('/');
    const encoded = new Map<string, Variant>();
    for (const { name: encoding, suffix } of ENCODINGS) {
      if (paths.has(path + suffix)) encoded.set(encoding, variant(readFileSync(path + suffix), `-${encoding}`));
    }
    files.set(name, {
      type: TYPES[extname(name)] ?? 'application/octet-stream',
      // Vite names everything under assets/ by its content hash.
      cacheControl: name.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
      identity: variant(readFileSync(path), ''),
      encoded,
    });
  }
  return files;
}

/** The encodings a client accepts (q > 0), from its Accept-Encoding header. */
function acceptedEncodings(header: string | undefined): Set<string> {
  const accepted = new Set<string>();
  for (const part of (header ?? '').split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (name && !(q && Number(q.slice(2)) === 0)) accepted.add(name);
  }
  return accepted;
}

function send(req: Request, res: Response, file: StaticFile): void {
  const accepted = acceptedEncodings(req.headers['accept-encoding']);
  const encoding = ENCODINGS.find(({ name }) => file.encoded.has(name) && accepted.has(name))?.name;
  const chosen = (encoding && file.encoded.get(encoding)) || file.identity;
  res.setHeader('Content-Type', file.type);
  res.setHeader('Cache-Control', file.cacheControl);
  res.setHeader('ETag', chosen.etag);
  if (file.encoded.size) res.setHeader('Vary', 'Accept-Encoding');
  if (encoding) res.setHeader('Content-Encoding', encoding);
  if (req.headers['if-none-match']?.split(',').some((tag) => tag.trim() === chosen.etag)) {
    res.status(304).end();
    return;
  }
  res.setHeader('Content-Length', chosen.body.length);
  res.status(200).end(chosen.body);
}

/** A path whose last segment names a file (`x.js`, `favicon.ico`) asks for an asset, not a page. */
function looksLikeAsset(path: string): boolean {
  return path.startsWith('assets/') || /\.[A-Za-z0-9]+$/.test(path);
}

/**
 * The web app at `/app/` (and `/` → `/app/`): files of the build, precompressed variants by
 * Accept-Encoding, `index.html` for every other page path (the app routes on the client). Until the
 * app is built, `/app/` answers 503 saying how to build it; the build is looked for again on each
 * request until found, then kept.
 */
export function webApp(dist: string = WEB_DIST) {
  let files: Map<string, StaticFile> | undefined;
  const loaded = () => (files ??= existsSync(join(dist, 'index.html')) ? loadDist(dist) : undefined);

  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (req.path === '/') return res.redirect(302, '/app/');
    if (req.path !== '/app' && !req.path.startsWith('/app/')) return next();
    setPageHeaders(res);
    if (req.path === '/app') return res.redirect(302, '/app/');
    const app = loaded();
    if (!app) {
      return sendError(req, res, 503, 'WEB_APP_NOT_BUILT', 'The web app is not built: run `npm run build:web` (`npm start` builds it when needed).');
    }
    let path: string;
    try {
      path = decodeURIComponent(req.path.slice('/app/'.length));
    } catch {
      return next();
    }
    const file = app.get(path) ?? (looksLikeAsset(path) ? undefined : app.get('index.html'));
    if (!file) return next();
    send(req, res, file);
  };
}
