import { createClient, type LoupeClient } from '@loupe/client';
import { CliError, EXIT, talkingTo } from './errors.ts';

/** Options every command takes (flags win over the environment). */
export type GlobalOptions = { url?: string; apiKey?: string; json?: boolean };

export const DEFAULT_URL = 'http://127.0.0.1:8000';

/**
 * The typed client for the server named by `--url`/`LOUPE_URL`, with `--api-key`/`LOUPE_API_KEY`;
 * `fetch` sends its requests (cursor hints) instead of the global one.
 */
export function connect(options: GlobalOptions, { needsKey = true, fetch }: { needsKey?: boolean; fetch?: typeof globalThis.fetch } = {}): LoupeClient {
  const url = options.url ?? process.env.LOUPE_URL ?? DEFAULT_URL;
  const apiKey = options.apiKey ?? process.env.LOUPE_API_KEY;
  if (needsKey && !apiKey) throw new CliError('no API key: set LOUPE_API_KEY or pass --api-key', EXIT.usage);
  try {
    new URL(url);
  } catch {
    throw new CliError(`not a URL: ${url}`, EXIT.usage);
  }
  talkingTo(url);
  // One request per call: import sends its own batches, and one failed batch must not fail others.
  return createClient({ url, batch: false, ...(apiKey ? { apiKey } : {}), fetch: bodyAsBytes(fetch ?? globalThis.fetch) });
}

/**
 * Sends a string body as bytes. Node's fetch still references a request's body after its answer
 * has come; a string is kept in the heap (which the CLI keeps small: a batch of large lines would
 * stay there twice), bytes outside it.
 */
function bodyAsBytes(fetch: typeof globalThis.fetch): typeof globalThis.fetch {
  return (input, init) => fetch(input, typeof init?.body === 'string' ? { ...init, body: Buffer.from(init.body) } : init);
}
