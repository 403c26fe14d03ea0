import { pino, type Logger } from 'pino';

export type { Logger };

// ISO timestamps, formatted once per millisecond: a busy server writes many lines in each.
let lastMs = 0;
let lastStamp = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastStamp = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastStamp;
}

export type LogSink = { logger: Logger; flush(): void };

/**
 * Structured JSON logs on stdout; each request's lines carry its `request_id`. Lines are written
 * in batches, at least every 100 ms, and all of them when the process exits (a crash that kills
 * the process outright can lose the last 100 ms).
 */
export function createLogger(level: string): Logger {
  return createLogSink(level).logger;
}

/** `mask` rewrites each batch of lines before it is written (it hides the database password). */
export function createLogSink(level: string, mask?: (text: string) => string): LogSink {
  // Synchronous writes (pino's default): with batching they are few, and exit can flush them.
  const batches = new LineBatches(pino.destination({ dest: 1, sync: true }), mask);
  flushedAtExit.add(batches);
  const logger = loupeLogger(level, batches);
  batchesOf.set(logger, batches);
  return { logger, flush: () => batches.flushSync() };
}

/** Loupe's logger over a stream of lines: one service name, ISO times. */
export function loupeLogger(level: string, stream: { write(line: string): unknown }): Logger {
  return pino({ level, base: { service: 'loupe' }, timestamp: isoTime }, stream);
}

/** The line batches under each logger made by createLogSink, for access lines written without pino. */
const batchesOf = new WeakMap<Logger, LineBatches>();

/** What a request's access line says. */
export type AccessLine = { request_id: string; method: string; url: string; status: number; duration_ms: number };

/**
 * Writes access lines as `log.info(fields, 'request')` would (`log.error` from status 500 on), the
 * line made here when the logger is createLogSink's: every request writes one, and pino's
 * serializing of the fields was the largest of Loupe's own costs on a model-list poll (6 % of the
 * server's busy CPU in the benchmark's profile, syscalls included). A test holds the two lines
 * equal, byte for byte.
 */
export function accessLogger(log: Logger): (fields: AccessLine) => void {
  const batches = batchesOf.get(log);
  return (fields) => {
    if (fields.status >= 500) log.error(fields, 'request');
    else if (!batches) log.info(fields, 'request');
    else if (log.isLevelEnabled('info')) batches.write(accessLineText(fields));
  };
}

/** An access line below status 500 as loupeLogger writes `info(fields, 'request')`. */
export function accessLineText(fields: AccessLine): string {
  return `{"level":30${isoTime()},"service":"loupe","request_id":${JSON.stringify(fields.request_id)},"method":${JSON.stringify(fields.method)},"url":${JSON.stringify(fields.url)},"status":${fields.status},"duration_ms":${fields.duration_ms},"msg":"request"}\n`;
}

type Destination = ReturnType<typeof pino.destination>;

const flushedAtExit = new Set<LineBatches>();
process.once('exit', () => {
  for (const batches of flushedAtExit) batches.flushSync();
});

const FLUSH_EVERY_MS = 100;
const FLUSH_AT_CHARS = 64 * 1024;

/**
 * Collects lines and writes them to the destination together. sonic-boom's own batching
 * (`minLength`) measures the byte length of its whole pending chunk on every write. Measured per
 * access line through the logger (CPU, formatting included): 2.2 µs here; with `minLength` 1 KiB
 * 3.1 µs, 4 KiB 3.3 µs, 16 KiB 4.7 µs; and the model list's server CPU per request ~5% higher.
 */
class LineBatches {
  readonly #out: Destination;
  readonly #mask: ((text: string) => string) | undefined;
  #lines: string[] = [];
  #chars = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #flushLater = () => {
    this.#timer = undefined;
    this.flush();
  };

  constructor(out: Destination, mask?: (text: string) => string) {
    this.#out = out;
    this.#mask = mask;
  }

  write(line: string): boolean {
    this.#lines.push(line);
    this.#chars += line.length;
    if (this.#chars >= FLUSH_AT_CHARS) this.flush();
    else this.#timer ??= setTimeout(this.#flushLater, FLUSH_EVERY_MS).unref();
    return true;
  }

  /** Writes the lines collected so far (pino calls this as the stream's flush). */
  flush(done?: (error?: Error) => void): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#lines.length > 0) {
      const text = this.#lines.join('');
      this.#lines = [];
      this.#chars = 0;
      this.#out.write(this.#mask ? this.#mask(text) : text);
    }
    done?.();
  }

  flushSync(): void {
    this.flush();
    this.#out.flushSync();
  }
}

// A request's logger lives on the request under symbols, as plain data: an accessor defined on
// each request object would give every request its own hidden class, which V8 keeps in old space
// (measured: one full GC every ~200 ms under load, half the model list's throughput).
const ROOT = Symbol('loupe.log.root');
const CHILD = Symbol('loupe.log.request');
type LoggedRequest = { id?: string; [ROOT]?: Logger; [CHILD]?: Logger };

/** Marks `req` as logging through `root`, its lines carrying `req.id` as `request_id`. */
export function bindRequestLog(req: object, root: Logger): void {
  (req as LoggedRequest)[ROOT] = root;
}

/** The request's logger, made on first use (most requests write only their access line); undefined for a request never bound. */
export function requestLog(req: object): Logger | undefined {
  const request = req as LoggedRequest;
  const root = request[ROOT];
  return root && (request[CHILD] ??= root.child({ request_id: request.id }));
}
