import type { NextFunction, Request, Response } from 'express';
import { createGunzip } from 'node:zlib';
import onHeaders from 'on-headers';
import { heapAccountsOf, keepBodyHold, refusalOf } from '../api/request-admission.ts';
import { heapUnits, HEAP_UNIT, type HeapBudget } from '../domain/heap-budget.ts';
import { leaveBodyUnread, sendError } from './errors.ts';
import { bodyWeight, JsonMeter, type JsonShape } from '../domain/json-shape.ts';
import { carriesBody } from './request-kind.ts';

export type BodyLimits = {
  /** Largest body in bytes (413 above). */
  maxBytes: number;
  /** Deepest nesting of objects and arrays (400 above). */
  maxDepth: number;
  /** How long a body may wait for room in the budget before 503. */
  waitMs: number;
  /** The slowest a body may arrive, in bytes per second, judged over each window of RATE_WINDOW_MS (408 below). */
  minRate: number;
  /** The longest a body may take to arrive (408 after). */
  timeoutMs: number;
};

/** The stretch over which a body's rate is judged; the first one is the grace a body starts with. */
export const RATE_WINDOW_MS = 5_000;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The text each JSON body was parsed from (see `bodyText`). */
const texts = new WeakMap<object, string>();

/**
 * The JSON text a request's body was parsed from, when it had one and the reader was asked to keep
 * it (`keepText`): the typed door hands it to tRPC, whose adapter would otherwise serialise the
 * parsed body again only to parse it once more.
 */
export function bodyText(req: object): string | undefined {
  return texts.get(req);
}

/**
 * Reads a JSON request body, after the request was admitted (route known, credentials checked),
 * with bounded cost: no compressed bodies (an inflated body has no size a client declared);
 * at most `maxBytes`; strict UTF-8; at most `maxDepth` levels; within a time limit and above a
 * minimum rate (408); and the heap it will take (its weight) held within a budget shared by every
 * request in flight.
 *
 * The budget is taken for bytes received, not declared: a body holds one unit to start and grows
 * its hold to the weight of the bytes arrived so far (domain/json-shape.ts bodyWeight), so a client that
 * declares a large body and sends nothing holds almost nothing, and a body that outweighs the whole
 * budget is refused (413) as soon as it does. A body that finds no room within `waitMs`
 * is answered 503 with Retry-After. The weight covers the text, the parsed value, its validated
 * copy and what the handler builds from them: it is held while the request is handled, and given
 * back when its answer begins (headers written) or the client goes away, so an event stream opened
 * with a body holds nothing once it streams.
 */
export function jsonBodyReader(limits: BodyLimits, budget: HeapBudget, { keepText }: { keepText: (req: Request) => boolean }) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (!carriesBody(req.method)) return next();
    if (refusalOf(req) !== undefined) {
      req.body = {}; // refused by admission: the body stays unread, the procedure answers
      return next();
    }
    const refuse = (status: number, code: string, reason: string, headers: Record<string, string> = {}) => {
      leaveBodyUnread(req, res, limits.maxBytes);
      sendError(req, res, status, code, reason, headers);
    };
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      return refuse(415, 'UNSUPPORTED_MEDIA_TYPE', `Compressed request bodies are not accepted (Content-Encoding: ${encoding.slice(0, 32)}); send plain JSON.`);
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(req.headers['content-type'] ?? '')?.[1];
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      return refuse(415, 'UNSUPPORTED_MEDIA_TYPE', `The request body must be UTF-8 JSON (charset ${charset.slice(0, 32)} is not accepted).`);
    }
    const bytes = await readBody(req, res, { limits, budget, meter: jsonBodyMeter(limits.maxDepth) });
    if (bytes === undefined || bytes === 'not gzip') return;
    if (bytes.length === 0) {
      req.body = {};
      return next();
    }
    let text: string;
    try {
      text = UTF8.decode(bytes);
    } catch {
      return sendError(req, res, 400, 'BAD_REQUEST', 'The request body is not valid UTF-8.');
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      return sendError(req, res, 400, 'PARSE_ERROR', malformedJsonReason((error as Error).message));
    }
    // Every input is an object; the REST adapter would spread anything else into one field per
    // character or element.
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      return sendError(req, res, 400, 'BAD_REQUEST', 'The request body must be a JSON object.');
    }
    req.body = body;
    // Only a request that needs its text keeps it: kept through the handler's database round trips,
    // a batch's text (a large object of a few hundred KB) outlives the young generation and costs a
    // full collection's marking later.
    if (keepText(req)) texts.set(req, text);
    // Once answered, the request's text and parsed body are garbage, even while its connection (and
    // so the request object) lives on: a large body's heap is not kept for the next request.
    res.once('close', () => {
      texts.delete(req);
      req.body = undefined;
    });
    next();
  };
}

/** How a body is weighed as it arrives: `write` false refuses it as nested too deep; `weight` is the heap it will take. */
export type BodyMeter = { write(chunk: Uint8Array): boolean; weight(byteLength: number): number; tooHeavyReason(): string };

/** A JSON body's meter: its depth bound, and its weight from its shape (domain/json-shape.ts bodyWeight). */
export function jsonBodyMeter(maxDepth: number): BodyMeter {
  const meter = new JsonMeter(maxDepth);
  return {
    write: (chunk) => meter.write(chunk),
    weight: (byteLength) => bodyWeight(byteLength, meter.shape()),
    tooHeavyReason: () => tooHeavyReason(meter.shape()),
  };
}

export type ReadBodyOptions = {
  limits: BodyLimits;
  budget: HeapBudget;
  meter: BodyMeter;
  /** The body is gzip: it is inflated as it arrives, and its inflated bytes are what the limits, the meter and the budget see. */
  gunzip?: boolean;
};

/**
 * Receives an admitted request's body within its limits and the heap budget (see jsonBodyReader):
 * the bytes, or undefined once the request is answered with the error. A gzip body is inflated as
 * it arrives; inflation stops at `maxBytes` inflated bytes (413), never after, and one that is not
 * gzip gives 'not gzip', left for the caller to answer.
 */
export async function readBody(req: Request, res: Response, { limits, budget, meter, gunzip = false }: ReadBodyOptions): Promise<Buffer | 'not gzip' | undefined> {
  /** The heaviest body that can be held: the budget less one share, so that others always have one. */
  const heaviest = budget.largest * HEAP_UNIT;
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  if (declared !== undefined && declared > limits.maxBytes) {
    leaveBodyUnread(req, res, limits.maxBytes);
    sendError(req, res, 413, 'PAYLOAD_TOO_LARGE', tooLargeReason(limits.maxBytes));
    return undefined;
  }

  const hold = budget.hold(heapAccountsOf(req));
  keepBodyHold(req, hold);
  res.once('close', () => hold.release());
  onHeaders(res, () => hold.release());
  // A body cut short (for its pace, its size, or a corrupt stream) leaves bytes unread on the connection: it is closed after the answer.
  const cut = (status: number, code: string, reason: string, headers: Record<string, string> = {}) => {
    hold.release();
    sendError(req, res, status, code, reason, { ...headers, Connection: 'close' });
    return undefined;
  };
  // One refused for what it weighs, or for want of room, is drained (its bytes are dropped as
  // they come, within its declared length), so that a client that sends it all reads the answer.
  const drain = (status: number, code: string, reason: string, headers: Record<string, string> = {}) => {
    hold.release();
    if (declared === undefined) return cut(status, code, reason, headers);
    req.resume();
    sendError(req, res, status, code, reason, headers);
    return undefined;
  };
  // A body waits for room at most `waitMs` in all, however many times it has to.
  let waitLeft = limits.waitMs;
  const room = (weight: number): boolean | Promise<boolean> => {
    const granted = hold.growTo(heapUnits(weight), waitLeft);
    if (typeof granted === 'boolean') return granted;
    const since = Date.now();
    return granted.then((ok) => {
      waitLeft = Math.max(0, waitLeft - (Date.now() - since));
      return ok;
    });
  };
  const first = room(0);
  if (first !== true && !(await first)) {
    hold.release();
    leaveBodyUnread(req, res, limits.maxBytes);
    sendError(req, res, 503, 'SERVICE_UNAVAILABLE', BUSY_REASON, { 'Retry-After': '1' });
    return undefined;
  }

  const bytes = await receive(req, { declared, limits, heaviest, meter, room, gunzip });
  if (bytes === 'too large') return cut(413, 'PAYLOAD_TOO_LARGE', tooLargeReason(limits.maxBytes, gunzip));
  if (bytes === 'too heavy') return drain(413, 'PAYLOAD_TOO_LARGE', meter.tooHeavyReason());
  if (bytes === 'busy') return drain(503, 'SERVICE_UNAVAILABLE', BUSY_REASON, { 'Retry-After': '1' });
  if (bytes === 'too slow') {
    return cut(408, 'REQUEST_TIMEOUT', `The request body arrived slower than the server accepts (${limits.minRate} bytes per second over ${RATE_WINDOW_MS / 1000} s).`);
  }
  if (bytes === 'timed out') return cut(408, 'REQUEST_TIMEOUT', `The request body did not arrive within ${limits.timeoutMs / 1000} s.`);
  if (bytes === 'aborted') return cut(400, 'BAD_REQUEST', 'The request body was not received completely.');
  if (bytes === 'too deep') return drain(400, 'BAD_REQUEST', tooDeepReason(limits.maxDepth));
  if (bytes === 'not gzip') {
    // The rest of a corrupt stream is not read: the connection closes after the answer.
    res.setHeader('Connection', 'close');
    return 'not gzip';
  }
  return bytes;
}

function malformedJsonReason(detail: string): string {
  return `Malformed JSON in the request body: ${detail}.`;
}

const BUSY_REASON = 'The server is handling as many large requests as it can hold; retry shortly.';

function tooHeavyReason(shape: JsonShape): string {
  return `The request body (${shape.containers} objects and arrays, ${shape.separators + 1} values so far) would take more memory than one request may hold. Split it.`;
}

function tooDeepReason(maxDepth: number): string {
  return `The request body nests objects and arrays deeper than ${maxDepth} levels.`;
}

function tooLargeReason(maxBytes: number, inflated = false): string {
  return `The request body is larger than the server accepts (${maxBytes} bytes${inflated ? ' once inflated' : ''}).`;
}

type Received = Buffer | 'too large' | 'too heavy' | 'too deep' | 'aborted' | 'busy' | 'too slow' | 'timed out' | 'not gzip';

type ReceiveOptions = {
  declared: number | undefined;
  limits: BodyLimits;
  heaviest: number;
  meter: BodyMeter;
  room: (weight: number) => boolean | Promise<boolean>;
  gunzip: boolean;
};

/**
 * The whole body as one buffer, or why not. Each chunk is measured (`meter`) as it comes, and
 * `room(weight)` must hold budget for the weight received so far: while it waits, reading pauses
 * (TCP holds the client back) and the rate is not judged. Each window of RATE_WINDOW_MS must bring
 * `minRate` bytes per second of the body, or what was left of it; and all of it must come within
 * `timeoutMs`. Past `heaviest` (the most one body may hold), the rest is not read.
 *
 * A gzip body goes through a streaming inflater: the rate and the declared length are of the bytes
 * sent, the size bound, the meter and the weight of the bytes inflated, and the inflater is paused
 * with the request, so that it never runs ahead of the budget; it is destroyed at the size bound.
 */
function receive(req: Request, { declared, limits, heaviest, meter, room, gunzip }: ReceiveOptions): Promise<Received> {
  return new Promise((resolve) => {
    const bound = declared ?? limits.maxBytes;
    // A body of a declared length is copied into one buffer of that length once a sixteenth of it
    // has come (a client that declares much and sends little makes the server allocate little;
    // chunks kept until the end would hold their memory twice, and scattered); until then, and
    // without a declared length (or inflated), its chunks are kept as they came.
    let into: Buffer | undefined;
    const chunks: Buffer[] = [];
    /** Bytes sent, and bytes kept (the same unless inflated). */
    let received = 0;
    let kept = 0;
    let done = false;
    let windowStart = 0;
    let receivedAtWindowStart = 0;
    let rateTimer: NodeJS.Timeout | undefined;
    const inflater = gunzip ? createGunzip() : undefined;
    const finish = (result: Received) => {
      if (done) return;
      done = true;
      clearTimeout(rateTimer);
      clearTimeout(deadline);
      req.off('data', onData).off('end', onEnd).off('aborted', onAborted).off('error', onAborted).off('close', onAborted);
      if (inflater) {
        inflater.off('data', onKept).off('end', onInflated).off('error', onCorrupt);
        inflater.on('error', () => {}); // destroying it may still report the stream it was cut from
        inflater.destroy();
      }
      if (typeof result === 'string') req.pause();
      resolve(result);
    };
    const startWindow = () => {
      windowStart = Date.now();
      receivedAtWindowStart = received;
      clearTimeout(rateTimer);
      rateTimer = setTimeout(judgeRate, RATE_WINDOW_MS);
    };
    const judgeRate = () => {
      const wanted = Math.min((limits.minRate * (Date.now() - windowStart)) / 1000, bound - receivedAtWindowStart);
      if (received - receivedAtWindowStart < wanted) finish('too slow');
      else startWindow();
    };
    const deadline = setTimeout(() => finish('timed out'), limits.timeoutMs);
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > bound) return finish('too large');
      received += chunk.length;
      if (inflater) inflater.write(chunk);
      else onKept(chunk);
    };
    const onKept = (chunk: Buffer) => {
      if (done) return;
      if (kept + chunk.length > limits.maxBytes) return finish('too large');
      if (!meter.write(chunk)) return finish('too deep');
      if (into) chunk.copy(into, kept);
      else chunks.push(chunk);
      kept += chunk.length;
      if (!inflater && !into && declared !== undefined && kept * 16 >= declared && kept < declared) {
        into = Buffer.allocUnsafe(declared);
        let at = 0;
        for (const chunkKept of chunks) at += chunkKept.copy(into, at);
        chunks.length = 0;
      }
      const weight = meter.weight(kept);
      if (weight > heaviest) return finish('too heavy');
      const granted = room(weight);
      if (granted === true) return;
      if (granted === false) return finish('busy');
      req.pause();
      inflater?.pause();
      clearTimeout(rateTimer);
      void granted.then((ok) => {
        if (done) return;
        if (!ok) return finish('busy');
        startWindow();
        inflater?.resume();
        req.resume();
      });
    };
    const whole = () => into ?? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, kept));
    const onEnd = () => {
      if (declared !== undefined && received !== declared) return finish('aborted');
      if (!inflater) return finish(whole());
      // All of it was sent: the request's 'close' that follows is no abort while the inflater finishes.
      req.off('aborted', onAborted).off('error', onAborted).off('close', onAborted);
      inflater.end();
    };
    const onInflated = () => finish(whole());
    const onCorrupt = () => finish('not gzip');
    const onAborted = () => finish('aborted');
    // A client that goes away mid-body ends the read with 'aborted', 'error' or at least 'close'.
    req.on('data', onData).on('end', onEnd).on('aborted', onAborted).on('error', onAborted).on('close', onAborted);
    inflater?.on('data', onKept).on('end', onInflated).on('error', onCorrupt);
    startWindow();
  });
}
