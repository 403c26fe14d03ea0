import { openApiDocument } from '@loupe/server';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// Every REST answer a test receives through the harness is checked against the API document the
// server publishes: the status must be one the operation lists, and the body must match the schema
// documented for that status. A test of any behaviour is then also a test of the document.

type Responses = Record<string, { content?: Record<string, { schema: unknown }> }>;
type Operation = { operationId: string; responses: Responses };

const document = structuredClone(openApiDocument()) as unknown as { paths: Record<string, Record<string, Operation>> };
const ajv = new Ajv2020({ strict: false, allErrors: false });
// ajv-formats is CommonJS: Node's default import is the plugin itself, where its types see the module.
(addFormatsModule as unknown as (a: Ajv2020) => Ajv2020)(ajv);
ajv.addSchema(document as object, 'loupe');

const operations = Object.entries(document.paths).flatMap(([template, item]) =>
  Object.entries(item).map(([method, operation]) => ({
    method: method.toUpperCase(),
    template,
    operation,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
  })),
);

/** (operation id, status) pairs answered so far in this test file's process. */
export const answered = new Set<string>();

const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/**
 * Why a REST answer does not match the document, or undefined when it does (or when the request
 * was not addressed to an operation of the document: unknown routes, HEAD, OPTIONS).
 */
export function documentProblem(method: string, url: string, status: number, contentType: string, body: unknown): string | undefined {
  const path = url.split('?')[0]!;
  const found = operations.find((o) => o.method === method && o.pattern.test(path));
  if (!found) return undefined;
  const where = `${method} ${found.template} answered ${status}`;
  const documented = found.operation.responses[String(status)];
  if (!documented) return `${where}, which the document does not list (it lists ${Object.keys(found.operation.responses).join(', ')})`;
  answered.add(`${found.operation.operationId} ${status}`);
  if (!documented.content) return body === undefined ? undefined : `${where} with a body, which the document says has none`;
  if (!contentType.startsWith('application/json')) return `${where} as ${contentType || 'no media type'}, not application/json`;
  const ref = `loupe#/${pointer('paths', found.template, method.toLowerCase(), 'responses', String(status), 'content', 'application/json', 'schema')}`;
  const validate = ajv.getSchema(ref);
  if (!validate) return `${where}: no schema at ${ref}`;
  if (validate(body)) return undefined;
  return `${where} with a body the document does not describe: ${ajv.errorsText(validate.errors)} — ${JSON.stringify(body).slice(0, 300)}`;
}
