import { createTRPCClient, httpBatchLink, httpLink, httpSubscriptionLink, splitLink, type TRPCClient } from '@trpc/client';
import { EventSource } from 'eventsource';
import type { AppRouter } from '@loupe/server/router';

export type { AppRouter };
export { TRPCClientError } from '@trpc/client';
export type LoupeClient = TRPCClient<AppRouter>;

export type ClientOptions = {
  /** The server's base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** An API key; sent as Basic credentials with username `api`. */
  apiKey?: string;
  /**
   * Combine concurrent calls into one HTTP request (default true); `'queries'` combines queries
   * only and sends each mutation at once. A batch is sent from a timer, which a browser may run
   * only after its next frame: a write a person waits on should not wait for that.
   */
  batch?: boolean | 'queries';
  fetch?: typeof globalThis.fetch;
};

/** The most procedures the server takes in one request (its MAX_TRPC_BATCH); larger batches are split. */
const MAX_BATCH = 10;

/** Basic credentials with username `api`, written with what browsers and Node both have. */
function basicCredentials(apiKey: string): string {
  const bytes = new TextEncoder().encode(`api:${apiKey}`);
  return `Basic ${btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join(''))}`;
}

/**
 * The end-to-end typed client of Loupe's tRPC door at `<url>/trpc`. Subscriptions (live queue
 * events) run over server-sent events through the `eventsource` package rather than the
 * browser's EventSource, which cannot send headers: the key goes in the Authorization header as
 * for every other call, never in the URL (where access logs and proxies would keep it).
 */
export function createClient({ url, apiKey, batch = true, fetch }: ClientOptions): LoupeClient {
  const base = `${url.replace(/\/$/, '')}/trpc`;
  const credentials = (): Record<string, string> => (apiKey ? { authorization: basicCredentials(apiKey) } : {});
  const send = fetch ?? globalThis.fetch;
  const options = { url: base, headers: credentials, ...(fetch ? { fetch } : {}) };
  const calls =
    batch === 'queries'
      ? splitLink({ condition: (op) => op.type === 'mutation', true: httpLink(options), false: httpBatchLink({ ...options, maxItems: MAX_BATCH }) })
      : batch
        ? httpBatchLink({ ...options, maxItems: MAX_BATCH })
        : httpLink(options);
  const subscriptions = httpSubscriptionLink({
    url: base,
    EventSource,
    eventSourceOptions: {
      fetch: (input, init) => send(input, { ...init, headers: { ...init.headers, ...credentials() } }),
    },
  });
  return createTRPCClient<AppRouter>({
    links: [splitLink({ condition: (op) => op.type === 'subscription', true: subscriptions, false: calls })],
  });
}
