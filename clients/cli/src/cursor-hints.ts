import type { CursorListener } from '@loupe/client/export';
import { NEXT_CURSOR_HEADER } from '@loupe/shared/headers';

export type { CursorListener };

/**
 * Hands on the server's `Loupe-Next-Cursor` header of the typed door's answers when their heads
 * arrive, before tRPC reads and parses their bodies: an export then asks for its next page while
 * this process still parses the current one. It is the `fetch` of the client; listeners are per
 * procedure, so one paged query per procedure may listen at a time.
 */
export class CursorHints {
  readonly #listeners = new Map<string, CursorListener>();

  readonly fetch: typeof globalThis.fetch = async (input, init) => {
    const response = await globalThis.fetch(input, init);
    const cursor = response.ok ? response.headers.get(NEXT_CURSOR_HEADER) : null;
    const listener = cursor ? this.#listeners.get(procedureOf(input)) : undefined;
    if (listener && cursor) {
      listener(cursor);
      // The request the listener makes reaches the socket on a later turn of the event loop: it
      // leaves before tRPC reads and parses this body, which holds the loop for milliseconds.
      await new Promise((resolve) => setImmediate(resolve));
    }
    return response;
  };

  /** Listens to the answers of one procedure (`feedback.query`) until the returned function is called. */
  listen(procedure: string, listener: CursorListener): () => void {
    this.#listeners.set(procedure, listener);
    return () => {
      if (this.#listeners.get(procedure) === listener) this.#listeners.delete(procedure);
    };
  }
}

/** The procedure a typed-door request calls: the last segment of `/trpc/<procedure>`. */
function procedureOf(input: string | URL | Request): string {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const path = new URL(url).pathname;
  return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1));
}
