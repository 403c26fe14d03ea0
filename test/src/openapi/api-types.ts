import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '@loupe/server';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

/** Where the TypeScript types generated from the API document are kept (loupe-api.ts). */
export const API_TYPES_FILE = fileURLToPath(new URL('./loupe-api.ts', import.meta.url));

/** The types openapi-typescript generates from the server's API document, as a module's text. */
export async function generatedApiTypes(): Promise<string> {
  const ast = await openapiTS(structuredClone(openApiDocument()) as Parameters<typeof openapiTS>[0]);
  return COMMENT_HEADER + astToString(ast);
}

// `npm run api-types -w test` rewrites the kept types after the document changed.
if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(API_TYPES_FILE, await generatedApiTypes());
