import { generateOpenApiDocument } from 'trpc-to-openapi';
import { appRouter } from './router.ts';

let document: ReturnType<typeof generateOpenApiDocument> | undefined;

/** The OpenAPI 3.1 document of every REST route, generated from the router once. */
export function openApiDocument(): ReturnType<typeof generateOpenApiDocument> {
  document ??= generateOpenApiDocument(appRouter, {
    title: 'Loupe',
    version: '0.1.0',
    description:
      'Human review of recorded LLM calls: annotation queues, feedback records and the public model catalog. ' +
      'Errors are JSON {reason, code, request_id, issues?}.',
    baseUrl: '/',
    securitySchemes: {
      basicAuth: { type: 'http', scheme: 'basic', description: 'username `api` (or the key owner) and an API key as password' },
      bearerAuth: { type: 'http', scheme: 'bearer', description: 'an API key' },
    },
  });
  return document;
}
