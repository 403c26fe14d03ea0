export type Credentials = { username: string | null; key: string };

/**
 * Reads `Authorization: Basic base64(<username>:<key>)` or `Authorization: Bearer <key>`.
 * Returns null when the header is absent or not one of those forms.
 */
export function parseAuthorization(header: string | undefined): Credentials | null {
  if (!header) return null;
  const space = header.indexOf(' ');
  if (space < 0) return null;
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (!value) return null;
  if (scheme === 'bearer') return { username: null, key: value };
  if (scheme !== 'basic') return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const key = decoded.slice(colon + 1);
  return key ? { username: decoded.slice(0, colon), key } : null;
}
