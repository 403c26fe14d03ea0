import { createTRPCClient, httpBatchLink, httpLink, httpSubscriptionLink, splitLink, type Operation, type TRPCClient } from '@trpc/client';
import { EventSource } from 'eventsource';
import type { AppRouter, RouterInputs, RouterOutputs } from '@loupe/server/router';

export type { AppRouter, RouterInputs, RouterOutputs };
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

/**
 * A query's input travels in its URL, which the server bounds with its request headers (16 KiB).
 * A query whose input is longer than this goes as a POST instead (the server allows the method
 * override), and a batch of queries is split before its URL grows past twice this.
 */
const LONG_QUERY_INPUT = 4096;

/** Whether a call is a query whose input is too long to travel in a URL. */
function longQuery(op: Operation): boolean {
  return op.type === 'query' && op.input !== undefined && JSON.stringify(op.input).length > LONG_QUERY_INPUT;
}

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
  const batched = httpBatchLink({ ...options, maxItems: MAX_BATCH, maxURLLength: 2 * LONG_QUERY_INPUT });
  const short =
    batch === 'queries'
      ? splitLink({ condition: (op) => op.type === 'mutation', true: httpLink(options), false: batched })
      : batch
        ? batched
        : httpLink(options);
  const calls = splitLink({ condition: longQuery, true: httpLink({ ...options, methodOverride: 'POST' }), false: short });
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
