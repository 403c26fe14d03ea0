import { ErrorBody } from '@loupe/shared';
import { generateOpenApiDocument } from 'trpc-to-openapi';
import { appRouter } from './router.ts';

type Document = ReturnType<typeof generateOpenApiDocument>;

/**
 * What each status means, the same for every operation that lists it (api/rest-meta.ts decides
 * which do). Every error answer has the one error schema, whichever layer of the server answers.
 */
const STATUS_DESCRIPTIONS: Record<string, string> = {
  '304': 'Not modified: If-None-Match named the current ETag (no body).',
  '400': 'The request is invalid: not JSON, a schema violation (`issues` lists them) or a broken rule; `reason` says which.',
  '401': 'No credentials, or an unknown or revoked key or session (WWW-Authenticate: Basic realm="loupe", except to scripts of Loupe\'s own pages).',
  '403': 'Authenticated, but not allowed: not on that project (not a member of its entity, or a viewer writing), a cookie write from another site, or a route turned off.',
  '404': 'A record the request names (in its path or body) does not exist in that project, or is deleted.',
  '409': 'A client-chosen id already exists with different content.',
  '413':
    'The body, or a batch in it, is larger than one request may carry: split it. Or the answer would hold more JSON than ' +
    'LOUPE_MAX_RESPONSE_BYTES: a record larger than that alone (`reason` names it), or a list without pages that passes it.',
  '415': 'The body is not plain UTF-8 JSON (Content-Type: application/json; no Content-Encoding).',
  '429': 'Too many failed authentications from this client; retry after Retry-After seconds.',
  '500': 'An unexpected error; `request_id` identifies it in the server log.',
  '503': 'The database is unavailable, or the server is reading too many request bodies; retry after Retry-After seconds.',
};

const ERROR_REF = { $ref: '#/components/schemas/Error' };

let document: Document | undefined;

/**
 * The OpenAPI 3.1 document of every REST route. trpc-to-openapi generates it from the procedures'
 * meta (their paths, schemas and statuses); then every error status gets Loupe's one error schema
 * (trpc-to-openapi describes its own adapter's error body, which Loupe does not send), the public
 * operation says it needs no credentials, the 304 of the model list carries no body, and a JSON
 * value is any value.
 */
export function openApiDocument(): Document {
  document ??= withLoupeAnswers(
    generateOpenApiDocument(appRouter, {
      title: 'Loupe',
      version: '0.1.0',
      description:
        'Human review of recorded LLM calls: annotation queues, feedback records and the public model catalog. ' +
        'Every error answer is JSON `{reason, code, request_id, issues?}` (schema `Error`).',
      baseUrl: '/',
      securitySchemes: {
        basicAuth: { type: 'http', scheme: 'basic', description: 'username `api` (or the key owner) and an API key as password' },
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'an API key' },
      },
      defs: { Error: ErrorBody },
    }),
  );
  return document;
}

function withLoupeAnswers(doc: Document): Document {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(item ?? {})) {
      const op = operation as { security?: unknown[]; responses?: Record<string, object> };
      op.security ??= [];
      const responses = op.responses ?? {};
      // New objects: the generator shares one response object between operations (and statuses).
      for (const status of Object.keys(responses)) {
        if (status === '200') continue;
        const description = STATUS_DESCRIPTIONS[status] ?? `HTTP ${status}`;
        responses[status] = status === '304' ? { description } : { description, content: { 'application/json': { schema: ERROR_REF } } };
      }
    }
  }
  const schemas = doc.components?.schemas ?? {};
  for (const name of Object.keys(schemas)) if (name.startsWith('error.')) delete schemas[name];
  // Every body is JSON, so "any JSON value" is the empty schema. Written out as the recursive union
  // the server validates with, it is true but breaks tools: openapi-typescript emits a type that
  // refers to itself through an indexed access (TS2502, openapi-ts/openapi-typescript#1603), after
  // which openapi-fetch types free-form fields as `undefined`, and Portman stops at the circular $ref.
  schemas.JsonValue = { description: 'any JSON value' };
  return doc;
}
