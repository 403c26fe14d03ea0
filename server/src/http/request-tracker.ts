import type { IncomingMessage, ServerResponse } from 'node:http';
import { newId } from '../domain/ids.ts';
import { accessLogger, bindRequestLog, type AccessLine, type Logger } from '../log.ts';
import type { Metrics } from './metrics.ts';
import { OIDC_CALLBACK_PATH } from './oidc-routes.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'node:http' {
  interface IncomingMessage {
    id?: string;
  }
}

// What the close listener needs, kept on the response as plain data: one shared listener
// function instead of a closure per request (this runs for every request, polls included).
const STARTED = Symbol('loupe.started');
const TRACKER = Symbol('loupe.requestTracker');
type Tracked = ServerResponse & { req: IncomingMessage & { originalUrl?: string }; [STARTED]: number; [TRACKER]: RequestTracker };

/**
 * Tracks every request and writes its access log. Gives each request its id (the client's
 * `X-Request-Id` when it is sane, else a new UUIDv7), a logger that carries it (`requestLog`) and
 * the `X-Request-Id` response header; when the response is done, one access-log line and the
 * request metrics. It also counts the responses not done yet, so that shutdown can wait for their
 * log lines.
 */
export class RequestTracker {
  #open = 0;
  #drained: (() => void) | undefined;
  readonly #log: Logger;
  readonly #access: (fields: AccessLine) => void;
  readonly #metrics: Metrics;
  readonly #routeOf: (method: string, path: string) => string;

  constructor(log: Logger, metrics: Metrics, routeOf: (method: string, path: string) => string) {
    this.#log = log;
    this.#access = accessLogger(log);
    this.#metrics = metrics;
    this.#routeOf = routeOf;
  }

  /** Called first for every request, before anything answers it. */
  readonly track = (req: IncomingMessage, res: ServerResponse): void => {
    const offered = req.headers['x-request-id'];
    const id = typeof offered === 'string' && CLIENT_REQUEST_ID.test(offered) ? offered : newId();
    req.id = id;
    bindRequestLog(req, this.#log);
    res.setHeader('X-Request-Id', id);
    const tracked = res as Tracked;
    tracked[STARTED] = performance.now();
    tracked[TRACKER] = this;
    this.#open++;
    // 'close' comes after 'finish', and also when the client went away before the answer was sent.
    res.on('close', onClose);
  };

  /**
   * Resolves once no response is open: every access line is written. Shutdown calls it after the
   * server stopped accepting, so no new response can keep it waiting.
   */
  drained(): Promise<void> {
    if (this.#open === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.#drained;
      this.#drained = () => {
        previous?.();
        resolve();
      };
    });
  }

  done(res: Tracked): void {
    try {
      const req = res.req;
      const method = req.method!; // always set on a server's request
      const durationMs = performance.now() - res[STARTED];
      // A connection closed before the response was complete (the client went away, or shutdown
      // cut it off) is logged with status 499, as nginx does.
      const status = res.writableFinished ? res.statusCode : 499;
      // The original URL: a mounted router (/trpc) has taken its prefix off req.url by now
      // (Express keeps it as originalUrl; a poll answered before Express has only req.url).
      const url = req.originalUrl ?? req.url!;
      const query = url.indexOf('?');
      const path = query < 0 ? url : url.slice(0, query);
      this.#metrics.observe(method, this.#routeOf(method, path), status, durationMs / 1000);
      this.#access({
        request_id: req.id!, // set by track
        method,
        // A single sign-on callback's query is the provider's code and state: kept out of the log.
        url: path === OIDC_CALLBACK_PATH && query >= 0 ? `${path}?…` : url,
        status,
        duration_ms: Math.round(durationMs * 1000) / 1000,
      });
    } finally {
      if (--this.#open === 0 && this.#drained) {
        const drained = this.#drained;
        this.#drained = undefined;
        drained();
      }
    }
  }
}

function onClose(this: Tracked): void {
  this[TRACKER].done(this);
}
