import { hash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'lp_';

/** A new API key: 256 random bits, shown once; only its SHA-256 is stored. */
export function generateApiKey(): { key: string; hash: string } {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, hash: hashApiKey(key) };
}

/**
 * Keys are high-entropy, so a fast digest is the right lookup hash (no per-request slow hash).
 * The one-shot `hash` makes no Hash object (every authenticated request computes one).
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}
