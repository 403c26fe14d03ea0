import { createTRPCClient, httpBatchLink, httpLink, type TRPCClient } from '@trpc/client';
import type { AppRouter } from '@loupe/server/router';

export type { AppRouter };
export { TRPCClientError } from '@trpc/client';
export type LoupeClient = TRPCClient<AppRouter>;

export type ClientOptions = {
  /** The server's base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** An API key; sent as Basic credentials with username `api`. */
  apiKey?: string;
  /** Combine concurrent calls into one HTTP request (default true). */
  batch?: boolean;
  fetch?: typeof globalThis.fetch;
};

/** Basic credentials with username `api`, written with what browsers and Node both have. */
function basicCredentials(apiKey: string): string {
  const bytes = new TextEncoder().encode(`api:${apiKey}`);
  return `Basic ${btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join(''))}`;
}

/** The end-to-end typed client of Loupe's tRPC door at `<url>/trpc`. */
export function createClient({ url, apiKey, batch = true, fetch }: ClientOptions): LoupeClient {
  const link = (batch ? httpBatchLink : httpLink)({
    url: `${url.replace(/\/$/, '')}/trpc`,
    headers: () => (apiKey ? { authorization: basicCredentials(apiKey) } : {}),
    ...(fetch ? { fetch } : {}),
  });
  return createTRPCClient<AppRouter>({ links: [link] });
}
