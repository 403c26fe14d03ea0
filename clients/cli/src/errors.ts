import { TRPCClientError } from '@loupe/client';

/** Exit codes, documented in the README: scripts depend on them. */
export const EXIT = { ok: 0, usage: 1, refused: 2, partial: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error that ends the command with a given exit code and a one-line message. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  constructor(message: string, exitCode: ExitCode) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** What the server (or the network) said about a failed call, as the CLI needs it. */
export type Failure = {
  /** HTTP status, or null when no answer came (connection refused, reset, timeout). */
  status: number | null;
  reason: string;
  code: string | null;
  /** The schema issues, when the request failed schema validation: where, and what is wrong there. */
  issues: { path: (string | number)[]; message: string }[];
};

type ErrorShape = { reason?: unknown; code?: unknown; issues?: { path?: unknown; message?: unknown }[]; data?: { httpStatus?: unknown; code?: unknown } };

/** Reads a TRPCClientError (or a network error) into a Failure. */
export function describeFailure(error: unknown): Failure {
  if (error instanceof TRPCClientError) {
    const shape = (error.shape ?? {}) as ErrorShape;
    const data = (error.data ?? shape.data ?? {}) as { httpStatus?: unknown; code?: unknown };
    const response = (error.meta as { response?: { status?: unknown } } | undefined)?.response;
    const status = typeof data.httpStatus === 'number' ? data.httpStatus : typeof response?.status === 'number' ? response.status : null;
    const issues = (shape.issues ?? []).map((issue) => ({
      path: Array.isArray(issue.path) ? (issue.path as (string | number)[]) : [],
      message: typeof issue.message === 'string' ? issue.message : 'invalid',
    }));
    return {
      status,
      reason: typeof shape.reason === 'string' ? shape.reason : status === null ? unreachable(error) : error.message,
      code: typeof data.code === 'string' ? data.code : null,
      issues,
    };
  }
  return { status: null, reason: unreachable(error), code: null, issues: [] };
}

/** The server the run talks to, set once by connect(): named when it cannot be reached. */
let serverUrl: string | undefined;
export function talkingTo(url: string): void {
  serverUrl = url;
}

/** No answer: which server, and what the network said (fetch's own message is only "fetch failed"). */
function unreachable(error: unknown): string {
  // The network's own word (ECONNREFUSED, ENOTFOUND, "bad port", …) is a few causes deep.
  let detail = error instanceof Error ? error.message : String(error);
  for (let cause: unknown = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    detail = typeof code === 'string' && /^E[A-Z]+$/.test(code) ? code : cause.message;
    if (detail === code) break;
  }
  return `could not reach ${serverUrl ?? 'the server'} (${detail})`;
}

/** Statuses (and no answer at all) that a retry after a pause can cure. */
export function isTransient(failure: Failure): boolean {
  return failure.status === null || failure.status === 429 || failure.status === 503 || failure.status === 502 || failure.status === 504;
}

/** A failure of a single request that is not an import line's fault ends the command: exit 2. */
export function refused(error: unknown): CliError {
  if (error instanceof CliError) return error;
  const failure = describeFailure(error);
  const where = failure.status === null ? 'no answer from the server' : `the server answered ${failure.status}`;
  return new CliError(`${where}: ${failure.reason}`, EXIT.refused);
}
