import type { NextFunction, Request, Response } from 'express';
import { ProjectId } from '@loupe/shared';
import { bodyHoldOf } from '../api/request-admission.ts';
import type { Services } from '../api/services.ts';
import { requireProjectAccess, type Access } from '../domain/access.ts';
import { DomainError } from '../domain/errors.ts';
import { heapUnits, HEAP_UNIT } from '../domain/heap-budget.ts';
import { decodeJsonRequest } from '../domain/otlp/decode-json.ts';
import { decodeProtobufRequest } from '../domain/otlp/decode-protobuf.ts';
import { storeSpanCalls } from '../domain/otlp/ingest.ts';
import { ExportTraceServiceResponse, RpcStatus } from '../domain/otlp/protobuf.ts';
import { callsOfSpans, PROJECT_HEADER } from '../domain/otlp/span-calls.ts';
import { jsonSpanCount, OtlpUnreadable, type ResourceSpans } from '../domain/otlp/spans.ts';
import { PastBound, scanExportRequest } from '../domain/otlp/wire-scan.ts';
import { NEW_RECORDS_HEADER } from '../api/new-records.ts';
import { findUnstorableText } from '../api/text-safety.ts';
import { authenticateRequest } from './admission.ts';
import { jsonBodyMeter, readBody, type BodyMeter } from './body.ts';
import { leaveBodyUnread, sendError, sendFailure } from './errors.ts';

/** The OTLP/HTTP paths under `/otel` (an exporter pointed at `<base>/otel` posts to the first). */
export const OTLP_TRACES_PATH = '/otel/v1/traces';
export const OTLP_EXPLAIN_PATH = '/otel/v1/traces/explain';
const PATHS = new Map([
  [OTLP_TRACES_PATH, 'ingest'],
  [OTLP_EXPLAIN_PATH, 'explain'],
] as const);

type Format = 'protobuf' | 'json';
const PROTOBUF_TYPE = 'application/x-protobuf';

/**
 * The heap a decoded protobuf request takes beyond 4 bytes per byte of its body, per nested message
 * (wire-scan.ts counts them): the message object, its fields and the JSON values and call made from
 * it. Held before the decoder runs.
 */
const WEIGHT_PER_MESSAGE = 200;
/** The JSON depth an OTLP/JSON body may have past the server's JSON depth: attribute values nest three levels per array or list. */
const OTLP_JSON_EXTRA_DEPTH = 64;
/** google.rpc.Code INVALID_ARGUMENT, the code of the Status answered to a request that cannot be read. */
const INVALID_ARGUMENT = 3;

/**
 * OTLP/HTTP trace ingest (contract 5.9): `POST /otel/v1/traces` stores each span as a call and
 * answers an `ExportTraceServiceResponse`; `POST /otel/v1/traces/explain` answers JSON showing how
 * each span would be mapped, and stores nothing. Not a tRPC procedure: the body is protobuf or
 * OTLP/JSON, possibly gzip, and the answer is written in the request's content type.
 *
 * Everything before the body is read is the HTTP layer's as for every route, and so are its errors
 * (the usual JSON error: 401, 403, 405, 413, 415, 429, 503): credentials first, then the
 * X-Loupe-Project header and the caller's access to it. The body is read within the same limits and
 * heap budget as a JSON body; a gzip body is inflated as it comes and bounded inflated. A body that
 * cannot be read (not gzip, not protobuf, not OTLP/JSON, values nested too deep, no project) is a
 * 400 with an OTLP `Status` in the request's content type.
 */
export function otlpTracesHttp(services: Services) {
  const { limits } = services.config;
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const route = PATHS.get(req.path.replace(/\/$/, '').toLowerCase() as typeof OTLP_TRACES_PATH);
    if (route === undefined) return next();
    const refuse = (status: number, code: string, reason: string, headers: Record<string, string> = {}) => {
      leaveBodyUnread(req, res, limits.bodyBytes);
      sendError(req, res, status, code, reason, headers);
    };
    if (req.method !== 'POST') return refuse(405, 'METHOD_NOT_SUPPORTED', `${req.path.slice(0, 64)} answers POST only.`, { Allow: 'POST' });
    const format = formatOf(req.headers['content-type']);
    if (format === undefined) {
      return refuse(415, 'UNSUPPORTED_MEDIA_TYPE', `The request body must be OTLP protobuf (Content-Type: ${PROTOBUF_TYPE}) or OTLP/JSON (application/json).`);
    }
    const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity' && encoding !== 'gzip') {
      return refuse(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${encoding.slice(0, 32)} is not accepted here; send gzip or no encoding.`);
    }

    const user = await authenticateRequest(services, req, res);
    if (user === undefined) return;
    // Explaining stores nothing: reading the project is enough.
    const access: Access = route === 'ingest' ? 'write' : 'read';
    const header = req.headers[PROJECT_HEADER.toLowerCase()];
    let projectHeader: string | undefined;
    if (header !== undefined) {
      const parsed = ProjectId.safeParse(header);
      if (!parsed.success) {
        return refuse(400, 'BAD_REQUEST', `The header ${PROJECT_HEADER} must be "<entity>/<project>", each part 1-128 of [A-Za-z0-9_.-] starting with a letter or digit.`);
      }
      projectHeader = parsed.data;
      try {
        requireProjectAccess(user, projectHeader, access);
      } catch (error) {
        leaveBodyUnread(req, res, limits.bodyBytes);
        return sendFailure(req, res, error);
      }
    }

    const meter: BodyMeter =
      format === 'json'
        ? jsonBodyMeter(limits.jsonDepth + OTLP_JSON_EXTRA_DEPTH)
        : // Protobuf bytes are held as they come; what decoding them takes is held once they are scanned.
          { write: () => true, weight: (bytes) => bytes, tooHeavyReason: () => TOO_HEAVY_REASON };
    const bytes = await readBody(req, res, {
      limits: { maxBytes: limits.bodyBytes, maxDepth: limits.jsonDepth + OTLP_JSON_EXTRA_DEPTH, waitMs: limits.bodyWaitMs, minRate: limits.bodyMinRate, timeoutMs: limits.bodyTimeoutMs },
      budget: services.heapBudget,
      meter,
      gunzip: encoding === 'gzip',
    });
    if (bytes === undefined) return;
    const answer = answerer(req, res, format);
    if (bytes === 'not gzip') return answer.status('The request body is not valid gzip (Content-Encoding: gzip).');

    try {
      let request: ResourceSpans[];
      if (format === 'protobuf') {
        const heaviest = services.heapBudget.largest * HEAP_UNIT;
        const maxMessages = Math.max(0, Math.floor((heaviest - 4 * bytes.length) / WEIGHT_PER_MESSAGE));
        const counts = scanExportRequest(bytes, { maxSpans: limits.batchRecords, maxMessages });
        const weight = 4 * bytes.length + WEIGHT_PER_MESSAGE * counts.messages;
        if (!(await roomFor(req, { weight, waitMs: limits.bodyWaitMs, heaviest }, answer))) return;
        request = decodeProtobufRequest(bytes);
      } else {
        const body = parseJson(bytes);
        const spans = jsonSpanCount(body);
        if (spans > limits.batchRecords) return answer.tooManySpans(`${spans}`, limits.batchRecords);
        request = decodeJsonRequest(body);
      }
      const { calls, refused } = storable(callsOfSpans(request, { projectHeader, now: Date.now() }));
      // The projects named by resources, when no header named one: access as for calls/batch/create.
      for (const projectId of new Set(calls.map(({ call }) => call.project_id))) {
        if (projectId !== projectHeader) requireProjectAccess(user, projectId, access);
      }
      if (route === 'explain') return answer.explained({ calls, rejected: refused }, limits.responseBytes);
      const stored = await storeSpanCalls(services.orm.em, { userId: user.id, calls, refused, events: services.queueEvents });
      res.setHeader(NEW_RECORDS_HEADER, String(stored.newRecords));
      answer.exported(stored.rejectedSpans, stored.errorMessage);
    } catch (error) {
      if (error instanceof PastBound) {
        if (error.bound === 'maxSpans') return answer.tooManySpans(`more than ${limits.batchRecords}`, limits.batchRecords);
        return answer.error(413, 'PAYLOAD_TOO_LARGE', TOO_HEAVY_REASON);
      }
      if (error instanceof OtlpUnreadable) return answer.status(error.message);
      if (error instanceof DomainError && error.kind === 'invalid') return answer.status(error.message);
      sendFailure(req, res, error);
    }
  };
}

/**
 * The spans' calls less those holding text no database here can store (U+0000, an unpaired
 * surrogate: calls/batch/create refuses those with a 400), which are refused with the field named.
 */
function storable({ calls, refused }: ReturnType<typeof callsOfSpans>): ReturnType<typeof callsOfSpans> {
  const kept: typeof calls = [];
  const alsoRefused = [...refused];
  for (const spanCall of calls) {
    const problem = findUnstorableText(spanCall.call);
    if (problem === null) {
      kept.push(spanCall);
      continue;
    }
    const { call } = spanCall;
    alsoRefused.push({ trace_id: call.trace_id!, span_id: call.id!, name: call.op_name.slice(0, 256), reason: `its ${problem.path.join('.')} ${problem.message}` });
  }
  return { calls: kept, refused: alsoRefused };
}

function formatOf(contentType: string | undefined): Format | undefined {
  const type = contentType?.split(';')[0]!.trim().toLowerCase();
  if (type === PROTOBUF_TYPE || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  return undefined;
}

const TOO_HEAVY_REASON = 'The request body would take more memory than one request may hold. Export fewer spans at once.';

/** Grows the body's heap hold to what decoding it takes: false once the request is answered (413 past the most one body may hold, 503 when there is no room in time). */
async function roomFor(
  req: Request,
  { weight, waitMs, heaviest }: { weight: number; waitMs: number; heaviest: number },
  answer: ReturnType<typeof answerer>,
): Promise<boolean> {
  if (weight > heaviest) {
    answer.error(413, 'PAYLOAD_TOO_LARGE', TOO_HEAVY_REASON);
    return false;
  }
  const hold = bodyHoldOf(req);
  const granted = hold === undefined ? true : await hold.growTo(heapUnits(weight), waitMs);
  if (!granted) answer.error(503, 'SERVICE_UNAVAILABLE', 'The server is handling as many large requests as it can hold; retry shortly.', { 'Retry-After': '1' });
  return granted;
}

/** The answers of one request, in its content type. */
function answerer(req: Request, res: Response, format: Format) {
  const send = (status: number, body: Buffer | string) => {
    if (res.headersSent) return;
    res.status(status);
    res.setHeader('Content-Type', format === 'protobuf' ? PROTOBUF_TYPE : 'application/json');
    res.end(body);
  };
  return {
    /** 200 ExportTraceServiceResponse; `partialSuccess` only when spans were refused. */
    exported(rejectedSpans: number, errorMessage: string) {
      const partialSuccess = rejectedSpans > 0 ? { rejectedSpans, errorMessage } : undefined;
      if (format === 'protobuf') {
        send(200, Buffer.from(ExportTraceServiceResponse.encode(partialSuccess ? { partialSuccess } : {}).finish()));
      } else {
        // OTLP/JSON writes 64-bit integers as decimal strings.
        send(200, JSON.stringify(partialSuccess ? { partialSuccess: { rejectedSpans: String(rejectedSpans), errorMessage } } : {}));
      }
    },
    /** 400 with an OTLP Status (google.rpc.Status): the request cannot be read. */
    status(message: string) {
      const status = { code: INVALID_ARGUMENT, message };
      send(400, format === 'protobuf' ? Buffer.from(RpcStatus.encode(status).finish()) : JSON.stringify(status));
    },
    /** /explain's answer, JSON whatever the request's type; 413 past the bytes one answer may hold. */
    explained(body: unknown, maxBytes: number) {
      const text = JSON.stringify(body);
      if (text.length > maxBytes) {
        return sendError(req, res, 413, 'PAYLOAD_TOO_LARGE', `The explanation would be larger than an answer may be (${maxBytes} bytes). Explain fewer spans at once.`);
      }
      if (res.headersSent) return;
      res.status(200).setHeader('Content-Type', 'application/json');
      res.end(text);
    },
    error(status: number, code: string, reason: string, headers: Record<string, string> = {}) {
      sendError(req, res, status, code, reason, headers);
    },
    tooManySpans(spans: string, max: number) {
      sendError(req, res, 413, 'PAYLOAD_TOO_LARGE', `The request holds ${spans} spans; at most ${max} are accepted in one export. Export fewer at once (OTEL_BSP_MAX_EXPORT_BATCH_SIZE).`);
    },
  };
}

function parseJson(bytes: Buffer): unknown {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new OtlpUnreadable('The request body is not valid UTF-8.');
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new OtlpUnreadable(`Malformed JSON in the request body: ${(error as Error).message}.`);
  }
}
