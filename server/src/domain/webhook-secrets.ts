import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

// Signing secrets of webhooks (contract 5.13). The server signs every delivery with them, so it
// must be able to read them back: they are stored sealed (AES-256-GCM) under a key derived from
// the server's secret (LOUPE_SECRET, or the one kept in the database; db/server-secret.ts). A copy
// of the database alone does not reveal them when LOUPE_SECRET is set outside it.

const PREFIX = 'whsec_';
/** 192 random bits, as Standard Webhooks libraries make them (24 bytes, base64). */
const SECRET_BYTES = 24;
const SEALED_VERSION = 'v1';

/** A new signing secret, `whsec_<base64>`: the form every Standard Webhooks library takes. */
export function newSigningSecret(): string {
  return PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The key bytes of a `whsec_` secret (what the HMAC is keyed with). */
function keyOf(secret: string): Buffer {
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

/**
 * The `webhook-signature` header: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret,
 * space-separated (two during a rotation's overlap).
 */
export function signatureHeader(secrets: readonly string[], { id, timestamp, body }: { id: string; timestamp: number; body: Buffer }): string {
  return secrets.map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`).update(body).digest('base64')}`).join(' ');
}

/** A stored secret that cannot be opened: sealed under another server secret (LOUPE_SECRET changed). */
export class UnreadableSecret extends Error {}

/** Opened secrets a box keeps, by their sealed form: every webhook a process delivers to, in practice. */
const OPENED_KEPT = 1_000;

/**
 * Seals and opens signing secrets under a key derived from the server secret for this one use.
 * What it opens it keeps (bounded): every attempt opens its webhook's secret, and deciphering it
 * each time was 0.4 ms of server CPU per feedback batch with two webhooks, 1.5 % of the batch.
 */
export class SecretBox {
  readonly #key: Buffer;
  readonly #opened = new Map<string, string>();

  constructor(serverSecret: string) {
    this.#key = Buffer.from(hkdfSync('sha256', serverSecret, 'loupe', 'webhook signing secrets v1', 32));
  }

  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return `${SEALED_VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')}`;
  }

  open(stored: string): string {
    const kept = this.#opened.get(stored);
    if (kept !== undefined) return kept;
    const secret = this.#decipher(stored);
    // The oldest opened goes first; a sealed form is random (its IV), so old ones are not asked for again.
    if (this.#opened.size >= OPENED_KEPT) this.#opened.delete(this.#opened.keys().next().value!);
    this.#opened.set(stored, secret);
    return secret;
  }

  #decipher(stored: string): string {
    const [version, data] = stored.split('.');
    if (version !== SEALED_VERSION || !data) throw new UnreadableSecret('the stored secret is not in a known form');
    const bytes = Buffer.from(data, 'base64url');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, bytes.subarray(0, 12));
      decipher.setAuthTag(bytes.subarray(12, 28));
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      throw new UnreadableSecret('the stored secret was sealed under another server secret (LOUPE_SECRET changed): rotate it');
    }
  }
}
