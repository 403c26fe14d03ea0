import type { IncomingMessage } from 'node:http';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a cookie-authenticated request must be refused as cross-site (contract 5.12): an unsafe
 * method whose `Origin` is not Loupe's own (the request's host, or LOUPE_PUBLIC_URL's origin), or,
 * without `Origin`, whose `Sec-Fetch-Site` is not `same-origin` (or `none`: typed by the person).
 * A request with neither header is let through: every browser sends `Origin` on a cross-origin
 * POST, PUT or DELETE, so such a request is not a page of another site acting with the cookie.
 */
export function isCrossSite(req: IncomingMessage, publicUrl: string | undefined): boolean {
  if (SAFE_METHODS.has(req.method ?? 'GET')) return false;
  const origin = req.headers.origin;
  if (origin !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(origin); // "null" (a sandboxed or file page) does not parse: refused
    } catch {
      return true;
    }
    if (publicUrl !== undefined && parsed.origin === new URL(publicUrl).origin) return false;
    // The host alone: behind a proxy that ends TLS the request itself arrives over plain HTTP.
    return parsed.host !== (req.headers.host ?? '').toLowerCase();
  }
  const site = req.headers['sec-fetch-site'];
  return site !== undefined && site !== 'same-origin' && site !== 'none';
}
