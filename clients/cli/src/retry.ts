import { setTimeout as sleep } from 'node:timers/promises';
import { describeFailure, isTransient, type Failure } from './errors.ts';

export type RetryPolicy = {
  /** Retries after the first attempt. */
  retries: number;
  /** The first pause; it doubles each time, with jitter, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  onRetry?: (failure: Failure, attempt: number) => void;
};

export const DEFAULT_RETRY: RetryPolicy = { retries: 8, baseDelayMs: 500, maxDelayMs: 15_000 };

/** The server's Retry-After in ms, when its answer carried one. */
function retryAfterMs(error: unknown): number | undefined {
  const response = (error as { meta?: { response?: { headers?: { get?(name: string): string | null } } } }).meta?.response;
  const value = response?.headers?.get?.('retry-after');
  const seconds = value ? Number(value) : NaN;
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/**
 * Runs `call`, again after a pause when it fails with 429, 503 or no answer at all (a server
 * restarting, a dropped connection). Safe for imports because every record carries an id and the
 * server stores a repeated id with the same content only once.
 */
export async function withRetry<T>(call: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const failure = describeFailure(error);
      if (attempt >= policy.retries || !isTransient(failure)) throw error;
      policy.onRetry?.(failure, attempt + 1);
      const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
      const pause = Math.min(policy.maxDelayMs, Math.max(backoff * (0.5 + Math.random() / 2), retryAfterMs(error) ?? 0));
      await sleep(pause);
    }
  }
}
