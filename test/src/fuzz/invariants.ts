import { documentProblem } from '../harness/api-document.ts';
import { ExportResponse, RpcStatus } from '../harness/otlp-wire.ts';
import type { FuzzRequest } from './requests.ts';
import type { Outcome } from './send.ts';

/** The longest any request may take, answer included. */
export const MAX_REQUEST_MS = 2_000;

/** The invariants checked on every answer, by name (the counts in the summary use these names). */
export const RESPONSE_INVARIANTS = {
  answered: 'every request is answered (a reset is allowed only while a body the server refused unread was still being sent)',
  'no-5xx': 'no status 500 or above, except 503 with Retry-After (the in-flight body budget)',
  'error-body': 'every 4xx/5xx body is JSON with a string `reason` and a string `code` (tRPC envelope: error.reason and error.data.code)',
  'under-2s': `every request is answered within ${MAX_REQUEST_MS} ms`,
  'request-id': 'every answer carries X-Request-Id',
  documented: 'every answer to an operation of the API document has a status it lists and a body its schema for that status accepts',
  'otlp-answer':
    'an OTLP route answers in the request\'s content type: 200 an ExportTraceServiceResponse (/explain: JSON {calls, rejected}), 400 after the body an OTLP Status; other errors the usual JSON error',
} as const;
export type InvariantName = keyof typeof RESPONSE_INVARIANTS;

export type Verdict = { checked: InvariantName[]; violated: { invariant: InvariantName; detail: string }[] };

/** Checks one outcome against the response invariants. */
export function checkOutcome(request: FuzzRequest, outcome: Outcome): Verdict {
  const verdict: Verdict = { checked: [], violated: [] };
  const check = (invariant: InvariantName, ok: boolean, detail: () => string) => {
    verdict.checked.push(invariant);
    if (!ok) verdict.violated.push({ invariant, detail: detail() });
  };
  if (outcome.kind === 'no answer') {
    // The server answers a refused body before reading it and closes the connection; a client
    // still writing may then see the reset before it reads the answer.
    const refusedUnread = request.body !== undefined && !outcome.bodySent && /ECONNRESET|EPIPE/.test(outcome.error);
    check('answered', refusedUnread, () => `no answer: ${outcome.error} after ${Math.round(outcome.ms)} ms`);
    check('under-2s', outcome.ms < MAX_REQUEST_MS, () => `no answer after ${Math.round(outcome.ms)} ms`);
    return verdict;
  }
  check('answered', true, () => '');
  const { status, headers, text, ms } = outcome;
  check('no-5xx', status < 500 || (status === 503 && Number(headers['retry-after']) > 0), () => `status ${status}: ${text.slice(0, 500)}`);
  check('under-2s', ms < MAX_REQUEST_MS, () => `answered after ${Math.round(ms)} ms (status ${status})`);
  check('request-id', typeof headers['x-request-id'] === 'string' && headers['x-request-id'] !== '', () => `status ${status} without X-Request-Id`);
  if (request.method !== 'HEAD') {
    let body: unknown = text || undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: the document check reports it if the operation promised JSON
    }
    const problem = documentProblem(request.method, request.path, status, headers['content-type'] ?? '', body);
    check('documented', problem === undefined, () => problem!);
  }
  const otlp = OTLP_ROUTE.exec(request.path.split('?')[0]!);
  if (otlp && request.method === 'POST') {
    const problem = otlpAnswerProblem({ explain: otlp[1] !== undefined, requestType: request.headers['content-type'] ?? '', status, contentType: headers['content-type'] ?? '', bytes: outcome.bytes });
    check('otlp-answer', problem === undefined, () => `status ${status}: ${problem}; body ${JSON.stringify(text.slice(0, 300))}`);
    if (problem === undefined && (status === 200 || isOtlpStatus(headers['content-type'], outcome.bytes))) return verdict;
  }
  if (status >= 400 && request.method !== 'HEAD') {
    const problem = errorBodyProblem(headers['content-type'], text);
    check('error-body', problem === undefined, () => `status ${status}: ${problem}; body ${JSON.stringify(text.slice(0, 500))}`);
  }
  return verdict;
}

/** Why an error body is not a proper one, or undefined. */
function errorBodyProblem(contentType: string | undefined, text: string): string | undefined {
  if (!/^application\/json\b/i.test(contentType ?? '')) return `content-type ${JSON.stringify(contentType)} is not JSON`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'the body is not JSON';
  }
  // The typed door answers in tRPC's envelope, one per procedure of a batch.
  const errors = (Array.isArray(body) ? body : [body]).map((element) => {
    const e = element as Record<string, any> | null;
    if (e && typeof e === 'object' && e.error && typeof e.error === 'object') return { reason: e.error.reason, code: e.error.data?.code };
    if (e && typeof e === 'object' && 'result' in e) return { reason: '', code: '' }; // a procedure of the batch that succeeded
    return e;
  });
  for (const error of errors) {
    if (!error || typeof error !== 'object') return 'an error is not an object';
    if (typeof (error as { reason?: unknown }).reason !== 'string') return 'no string `reason`';
    if (typeof (error as { code?: unknown }).code !== 'string') return 'no string `code`';
  }
  return undefined;
}

const OTLP_ROUTE = /^\/otel\/v1\/traces(\/explain)?\/?$/i;

function isOtlpStatus(contentType: string | undefined, bytes: Buffer): boolean {
  if (/^application\/x-protobuf/i.test(contentType ?? '')) return true;
  try {
    const body = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    return typeof body.code === 'number' && typeof body.message === 'string';
  } catch {
    return false;
  }
}

/** Why an answer of an OTLP route is not what OTLP/HTTP (contract 5.9) says, or undefined. */
function otlpAnswerProblem({ explain, requestType, status, contentType, bytes }: { explain: boolean; requestType: string; status: number; contentType: string; bytes: Buffer }): string | undefined {
  const protobuf = /^application\/(x-)?protobuf\s*(;|$)/i.test(requestType);
  if (status === 200) {
    if (explain) {
      const body = parse(bytes);
      return body && Array.isArray(body.calls) && Array.isArray(body.rejected) ? undefined : 'an /explain answer is not JSON {calls, rejected}';
    }
    if (protobuf) {
      if (contentType !== 'application/x-protobuf') return `a protobuf request answered as ${contentType}`;
      try {
        ExportResponse.decode(bytes);
        return undefined;
      } catch (error) {
        return `the answer is not an ExportTraceServiceResponse: ${(error as Error).message}`;
      }
    }
    const body = parse(bytes);
    if (!contentType.startsWith('application/json') || !body) return 'a JSON request not answered with a JSON object';
    const partial = body.partialSuccess as Record<string, unknown> | undefined;
    if (partial !== undefined && (typeof partial.rejectedSpans !== 'string' || typeof partial.errorMessage !== 'string')) return 'partialSuccess is not {rejectedSpans, errorMessage}';
    return undefined;
  }
  if (status === 400 && isOtlpStatus(contentType, bytes)) {
    if (protobuf !== /^application\/x-protobuf/i.test(contentType)) return `a Status written as ${contentType} for a request of ${requestType}`;
    try {
      const decoded = protobuf ? (RpcStatus.toObject(RpcStatus.decode(bytes)) as Record<string, unknown>) : parse(bytes)!;
      return decoded.code === 3 && typeof decoded.message === 'string' && decoded.message !== '' ? undefined : `not a Status of code 3 with a message: ${JSON.stringify(decoded)}`;
    } catch (error) {
      return `the Status does not decode: ${(error as Error).message}`;
    }
  }
  return undefined; // the usual JSON error, checked as every error is
}

function parse(bytes: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
