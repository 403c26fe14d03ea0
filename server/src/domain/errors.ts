/**
 * Errors that domain code throws. Each kind maps to one HTTP status in api/error-policy.ts; the
 * message is the `reason` a client reads, so it must be a sentence about the request, never an
 * internal detail.
 */
export type DomainErrorKind =
  | 'invalid' // 400
  | 'malformed' // 400, the body is not JSON
  | 'unauthenticated' // 401
  | 'forbidden' // 403
  | 'not_found' // 404
  | 'conflict' // 409
  | 'too_large' // 413
  | 'rate_limited' // 429
  | 'unavailable'; // 503, for now: the client should retry (an event stream that ends to be renewed)

export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  /** Seconds a client should wait before retrying (429). */
  readonly retryAfterSeconds: number | undefined;

  constructor(kind: DomainErrorKind, reason: string, retryAfterSeconds?: number) {
    super(reason);
    this.name = 'DomainError';
    this.kind = kind;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export const invalid = (reason: string) => new DomainError('invalid', reason);
export const forbidden = (reason: string) => new DomainError('forbidden', reason);
export const notFound = (reason: string) => new DomainError('not_found', reason);
export const conflict = (reason: string) => new DomainError('conflict', reason);
export const tooLarge = (reason: string) => new DomainError('too_large', reason);
