import { documentProblem } from '../harness/api-document.ts';
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
