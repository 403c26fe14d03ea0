import type { Response } from 'express';

/**
 * The protective headers of every page the server serves (the web app at /app/, Swagger UI at
 * /docs): everything comes from this origin, no inline code, no CDN, no framing, no content-type
 * sniffing, no referrer sent on.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

export function setPageHeaders(res: Response): void {
  for (const [name, value] of Object.entries(PAGE_HEADERS)) res.setHeader(name, value);
}
