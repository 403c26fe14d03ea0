import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { LRUCache } from 'lru-cache';
import type { LookupFunction } from 'node:net';
import { checkWebhookUrl, hostOf, publicAddresses, type ResolveHost, type UrlPolicy } from '../domain/webhook-addresses.ts';
import type { AttemptOutcome } from '../domain/webhook-deliveries.ts';

// One attempt of one delivery: a POST to the webhook's url, bounded in time and in what is read
// back. The host is resolved for this attempt and every address checked (webhook-addresses.ts);
// the connection is made to the first checked address, through a keep-alive pool of its own per
// address (AgentPool) whose `lookup` answers that address and nothing else: nothing resolves the
// name a second time in between, and a pooled connection is one made to that very address.
// Redirects are not followed.

/** At most this much of a receiver's answer is read; the rest is discarded with the connection. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** The longest Retry-After honoured: a receiver cannot park a delivery for longer than a day. */
const MAX_RETRY_AFTER_MS = 86_400_000;
/** Connection pools kept (one per host, checked address, port and scheme); the least recent is closed past it. */
const MAX_POOLS = 256;
/** An idle pooled connection is closed after this. */
const IDLE_SOCKET_MS = 4_000;

export type Attempt = {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
  policy: UrlPolicy & { resolve: ResolveHost };
  pools: AgentPool;
  /** Aborts the attempt (shutdown). */
  signal: AbortSignal;
};

/** Keep-alive connection pools, one per checked address (with the host, port and scheme). */
export class AgentPool {
  readonly #agents = new LRUCache<string, HttpAgent>({ max: MAX_POOLS, dispose: (agent) => agent.destroy() });

  /** The pool whose connections go to `address` only. */
  agentFor({ url, address, family }: { url: URL; address: string; family: number }): HttpAgent {
    const key = `${url.protocol}//${hostOf(url)}|${address}|${url.port}`;
    let agent = this.#agents.get(key);
    if (!agent) {
      const lookup: LookupFunction = (_hostname, options, callback) => {
        const done = callback as (error: null, address: string | { address: string; family: number }[], family?: number) => void;
        if (options.all) done(null, [{ address, family }]);
        else done(null, address, family);
      };
      const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, maxFreeSockets: 4, lookup };
      agent = url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
      this.#agents.set(key, agent);
    }
    return agent;
  }

  close(): void {
    this.#agents.clear();
  }
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
  const deadline = Date.now() + attempt.timeoutMs;
  const late = (): AttemptOutcome => ({ kind: 'failed', status: null, error: `no answer within ${attempt.timeoutMs} ms` });
  let url: URL;
  let target: { address: string; family: number };
  try {
    url = checkWebhookUrl(attempt.url, attempt.policy);
    // Resolved and checked for this attempt; the time it takes counts against the attempt's.
    let timer: NodeJS.Timeout | undefined;
    const checked = await Promise.race([
      publicAddresses(url, attempt.policy),
      new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), attempt.timeoutMs))),
    ]).finally(() => clearTimeout(timer));
    if (!checked) return late();
    target = checked[0]!;
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
      agent: attempt.pools.agentFor({ url, ...target }),
      signal: attempt.signal,
    };
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(options, (response) => {
      settle(outcomeOf(response));
      // Read a little of the answer (the connection is then reused), never much.
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) response.destroy();
      });
      response.on('end', () => clearTimeout(timer));
      response.on('close', () => clearTimeout(timer));
    });
    const timer = setTimeout(() => {
      settle(late());
      request.destroy();
    }, Math.max(deadline - Date.now(), 0));
    request.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      settle({ kind: 'failed', status: null, error: `the request failed: ${error.code ?? error.message}` });
    });
    request.end(attempt.body);
  });
}
