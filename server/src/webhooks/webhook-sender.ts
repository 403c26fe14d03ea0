import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { AddressRefused, checkWebhookUrl, hostOf, publicAddresses, type ResolveHost, type UrlPolicy } from '../domain/webhook-addresses.ts';
import type { AttemptOutcome } from '../domain/webhook-deliveries.ts';

// One attempt of one delivery: a POST to the webhook's url, bounded in time and in what is read
// back. The host is resolved for this attempt, every address checked (webhook-addresses.ts), and
// the connection made to a checked address through the request's own `lookup`: Node connects to
// what it returns, so nothing can resolve the name a second time in between. Each attempt opens
// its own connection (no keep-alive pool), so each one is checked. Redirects are not followed.

/** At most this much of a receiver's answer is read; the rest is discarded with the connection. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** The longest Retry-After honoured: a receiver cannot park a delivery for longer than a day. */
const MAX_RETRY_AFTER_MS = 86_400_000;

export type Attempt = {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
  policy: UrlPolicy & { resolve: ResolveHost };
  /** Aborts the attempt (shutdown). */
  signal: AbortSignal;
};

/** The request's lookup: the checked addresses of this attempt, in the form Node asks for. */
function checkedLookup(url: URL, policy: Attempt['policy']): LookupFunction {
  return (hostname, options, callback) => {
    const done = callback as (error: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void;
    publicAddresses(url, { resolve: policy.resolve, allowPrivate: policy.allowPrivate }).then(
      (found) => {
        const wanted = options.family === 4 || options.family === 6 ? found.filter((entry) => entry.family === options.family) : found;
        if (!wanted.length) return done(Object.assign(new Error(`${hostname} has no IPv${options.family} address`), { code: 'ENOTFOUND' }), '');
        if (options.all) return done(null, wanted);
        return done(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: Error) => done(error, ''),
    );
  };
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const ms = /^\s*\d+\s*$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS) : undefined;
}

/** What one status means for the delivery. */
function outcomeOf(response: IncomingMessage): AttemptOutcome {
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status >= 300 && status < 400) return { kind: 'failed', status, error: `the receiver answered ${status}, a redirect, which is not followed` };
  if (status === 410) return { kind: 'failed', status, error: 'the receiver answered 410 Gone', gone: true };
  const retryAfter = status === 429 || status === 503 ? retryAfterMs(headerText(response.headers['retry-after'])) : undefined;
  return { kind: 'failed', status, error: `the receiver answered ${status}`, ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }) };
}

const headerText = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** Makes one attempt; never throws: every way it can end is an outcome. */
export async function sendAttempt(attempt: Attempt): Promise<AttemptOutcome> {
  let url: URL;
  try {
    url = checkWebhookUrl(attempt.url, attempt.policy);
    // A url written with an address is not looked up: it is checked here.
    if (isIP(hostOf(url))) await publicAddresses(url, attempt.policy);
  } catch (error) {
    return { kind: 'failed', status: null, error: `refused: ${(error as Error).message}` };
  }
  return new Promise<AttemptOutcome>((resolve) => {
    let settled = false;
    const settle = (outcome: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const options: RequestOptions = {
      method: 'POST',
      host: hostOf(url),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      headers: { ...attempt.headers, 'content-length': String(attempt.body.length) },
      lookup: checkedLookup(url, attempt.policy),
      agent: false,
      signal: attempt.signal,
    };
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(options, (response) => {
      settle(outcomeOf(response));
      // Read a little of the answer (some receivers wait for that before they close), never much.
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) response.destroy();
      });
      response.on('end', () => clearTimeout(timer));
      response.on('close', () => clearTimeout(timer));
    });
    const timer = setTimeout(() => {
      settle({ kind: 'failed', status: null, error: `no answer within ${attempt.timeoutMs} ms` });
      request.destroy();
    }, attempt.timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (error instanceof AddressRefused) settle({ kind: 'failed', status: null, error: `refused: ${error.message}` });
      else settle({ kind: 'failed', status: null, error: `the request failed: ${error.code ?? error.message}` });
    });
    request.end(attempt.body);
  });
}
