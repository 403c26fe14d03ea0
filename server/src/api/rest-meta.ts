import type { OpenApiMeta } from 'trpc-to-openapi';

/** Statuses only some operations answer; every other status follows from the operation's kind. */
type OwnStatus = 304 | 401 | 403 | 404 | 409 | 413 | 429;

type RestOperation = {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: `/${string}`;
  tags: string[];
  summary: string;
  description?: string;
  /** Open to anonymous callers (the model list); every other operation needs credentials. */
  public?: true;
  /**
   * 404 where the request names a record that may not exist; 409 where a client id may clash; 413
   * where a read without a body names a record larger than an answer may hold; 401, 403 and 429
   * where a public operation checks credentials of its own (sign-in, accepting an invitation).
   */
  answers?: OwnStatus[];
};

/**
 * A procedure's REST meta, from which trpc-to-openapi writes the operation into the API document.
 * Every status the operation can answer is listed here, decided once by its kind: 400 for its
 * input and 500 for everyone; 401 (no or bad credentials), 403 (not allowed on the project), 429
 * (too many failed authentications) and 503 (database unavailable) for protected operations; 413
 * (body or batch too large), 415 (not plain UTF-8 JSON) and 503 (body budget full) for methods with
 * a body; then the operation's own. api/openapi.ts gives every error status the one error schema.
 */
export function rest(operation: RestOperation): OpenApiMeta {
  const { method, path, tags, summary, description, answers = [] } = operation;
  const statuses = new Set<number>([...answers, 400, 500]);
  if (!operation.public) for (const status of [401, 403, 429, 503]) statuses.add(status);
  if (method === 'POST' || method === 'PUT') for (const status of [413, 415, 503]) statuses.add(status);
  return {
    openapi: {
      method,
      path,
      tags,
      summary,
      ...(description ? { description } : {}),
      ...(operation.public ? { protect: false } : {}),
      errorResponses: [...statuses].sort((a, b) => a - b),
    },
  };
}
