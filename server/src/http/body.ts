import type { NextFunction, Request, Response } from 'express';
import { refusalOf } from '../api/request-admission.ts';
import { BodyBudget } from './body-budget.ts';
import { leaveBodyUnread, sendError } from './errors.ts';
import { bodyWeight, measureJson, provisionalWeight } from './json-shape.ts';
import { carriesBody } from './request-kind.ts';

export type BodyLimits = {
  /** Largest body in bytes (413 above). */
  maxBytes: number;
  /** Deepest nesting of objects and arrays (400 above). */
  maxDepth: number;
  /** The weight (bodyWeight) of all bodies being read or handled at once; one body's most, too. */
  budget: number;
  /** How long a body may wait for room in the budget before 503. */
  waitMs: number;
};

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The text each JSON body was parsed from (see `bodyText`). */
const texts = new WeakMap<object, string>();

/**
 * The JSON text a request's body was parsed from, when it had one: the typed door hands it to tRPC,
 * whose adapter would otherwise serialise the parsed body again only to parse it once more.
 */
export function bodyText(req: object): string | undefined {
  return texts.get(req);
}
const UNIT = 64 * 1024;

/**
 * Reads a JSON request body, after the request was admitted (route known, credentials checked),
 * with bounded cost: no compressed bodies (an inflated body has no size a client declared);
 * at most `maxBytes`; strict UTF-8; at most `maxDepth` levels; and the heap it will take
 * (its weight) held within a budget shared by every request in flight until its response is
 * done — a request that finds no room within `waitMs` is answered 503 with Retry-After.
 */
export function jsonBodyReader(limits: BodyLimits) {
  // Counted in units of 64 KiB; a small body holds one unit.
  const budget = new BodyBudget(Math.max(1, Math.floor(limits.budget / UNIT)));

  /** The budget's units a weight in bytes takes. */
  const unitsOf = (weight: number) => Math.min(Math.ceil(weight / UNIT), budget.size);

  /**
   * Holds `wanted` units until the response is done: true at once when there is room, else a
   * promise of whether they came in time. Units granted after the client went away go back.
   */
  const reserve = (res: Response, wanted: number, ahead = false): boolean | Promise<boolean> => {
    if (wanted <= 0) return true;
    let held = false;
    let closed = false;
    res.once('close', () => {
      closed = true;
      if (held) budget.give(wanted);
    });
    const hold = (taken: boolean) => {
      if (taken && closed) budget.give(wanted);
      held = taken && !closed;
      return held;
    };
    const taken = budget.take(wanted, limits.waitMs, ahead);
    return typeof taken === 'boolean' ? hold(taken) : taken.then(hold);
  };

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
    const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
    if (declared !== undefined && declared > limits.maxBytes) return refuse(413, 'PAYLOAD_TOO_LARGE', tooLargeReason(limits.maxBytes));
    // Room for what the bytes will cost first: a body without a declared length may be as long as the limit.
    let held = unitsOf(provisionalWeight(declared ?? limits.maxBytes));
    const room = reserve(res, held);
    if (room !== true && !(await room)) return refuse(503, 'SERVICE_UNAVAILABLE', BUSY_REASON, { 'Retry-After': '1' });

    const bytes = await readBytes(req, declared, limits.maxBytes);
    if (bytes === 'too large') return refuse(413, 'PAYLOAD_TOO_LARGE', tooLargeReason(limits.maxBytes));
    if (bytes === 'aborted') return refuse(400, 'BAD_REQUEST', 'The request body was not received completely.');
    if (bytes.length === 0) {
      req.body = {};
      return next();
    }
    const shape = measureJson(bytes, limits.maxDepth);
    if (shape.depth > limits.maxDepth) {
      return sendError(req, res, 400, 'BAD_REQUEST', `The request body nests objects and arrays deeper than ${limits.maxDepth} levels.`);
    }
    const weight = bodyWeight(bytes.length, shape);
    if (weight > limits.budget) {
      return sendError(req, res, 413, 'PAYLOAD_TOO_LARGE', `The request body (${bytes.length} bytes, ${shape.containers} objects and arrays, ${shape.separators + 1} values) would take more memory than one request may hold. Split it.`);
    }
    if (unitsOf(weight) > held) {
      // Ahead of bodies waiting to be read: this one already holds most of its share.
      const more = reserve(res, unitsOf(weight) - held, true);
      if (more !== true && !(await more)) return sendError(req, res, 503, 'SERVICE_UNAVAILABLE', BUSY_REASON, { 'Retry-After': '1' });
      held = unitsOf(weight);
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
    texts.set(req, text);
    next();
  };
}

function malformedJsonReason(detail: string): string {
  return `Malformed JSON in the request body: ${detail}.`;
}

const BUSY_REASON = 'The server is handling as many large requests as it can hold; retry shortly.';

function tooLargeReason(maxBytes: number): string {
  return `The request body is larger than the server accepts (${maxBytes} bytes).`;
}

/** The whole body as one buffer, or why not. A declared length is read into place (no copies). */
function readBytes(req: Request, declared: number | undefined, maxBytes: number): Promise<Buffer | 'too large' | 'aborted'> {
  return new Promise((resolve) => {
    const into = declared !== undefined && declared > 0 ? Buffer.allocUnsafe(declared) : undefined;
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (result: Buffer | 'too large' | 'aborted') => {
      req.off('data', onData).off('end', onEnd).off('aborted', onAborted).off('error', onAborted).off('close', onAborted);
      if (typeof result === 'string') req.pause();
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > (declared ?? maxBytes)) return finish('too large');
      if (into) chunk.copy(into, received);
      else chunks.push(chunk);
      received += chunk.length;
    };
    const onEnd = () => {
      if (into) return finish(received === into.length ? into : 'aborted');
      finish(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onAborted = () => finish('aborted');
    // A client that goes away mid-body ends the read with 'aborted', 'error' or at least 'close'.
    req.on('data', onData).on('end', onEnd).on('aborted', onAborted).on('error', onAborted).on('close', onAborted);
  });
}
