import { createClient, type LoupeClient } from '@loupe/client';
import { documentProblem } from './api-document.ts';
import { createUser, type CreatedKeyForTest } from './users.ts';
import type { TestServer } from './server.ts';

export type Reply<T = any> = { status: number; headers: Headers; body: T; text: string };

export type CallOptions = {
  body?: unknown;
  /** Raw body text, sent as is. */
  raw?: string;
  key?: string;
  headers?: Record<string, string>;
  /** Aborts the request (the reply promise rejects). */
  signal?: AbortSignal;
};

export function basic(key: string, username = 'api'): string {
  return `Basic ${Buffer.from(`${username}:${key}`).toString('base64')}`;
}

/**
 * One REST call through plain fetch; the body is parsed when it is JSON. The answer must be one the
 * API document describes for that operation (status and body), or the call throws.
 */
export async function rest<T = any>(server: { url: string }, method: string, path: string, options: CallOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization ??= basic(options.key);
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(server.url + path, { method, headers, body, signal: options.signal });
  const text = await response.text();
  let parsed: unknown = undefined;
  const contentType = response.headers.get('content-type') ?? '';
  if (contentType.includes('json') && text) parsed = JSON.parse(text);
  const problem = documentProblem(method, path, response.status, contentType, text ? parsed ?? text : undefined);
  if (problem) throw new Error(`The API document does not describe this answer: ${problem}`);
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}

export function client(server: { url: string }, key?: string): LoupeClient {
  return createClient({ url: server.url, apiKey: key, batch: false });
}

export type { CreatedKeyForTest };
export { createUser };
