import { request, type IncomingHttpHeaders } from 'node:http';
import type { FuzzRequest } from './requests.ts';

export type Answer = { kind: 'answer'; status: number; headers: IncomingHttpHeaders; text: string; ms: number; bytes: Buffer };
/** No answer: the connection failed, or nothing came within the client's patience. */
export type NoAnswer = { kind: 'no answer'; error: string; ms: number; bodySent: boolean };
export type Outcome = Answer | NoAnswer;

const KEEP_BYTES = 16 * 1024 * 1024;

/**
 * Sends one request on its own connection with node:http (fetch would refuse or rewrite the odd
 * headers): the body with its Content-Length, or chunked. Control characters and spaces in the
 * path are percent-encoded (an HTTP client cannot send them); anything else goes as generated.
 */
export function send(base: URL, r: FuzzRequest, body: Buffer | undefined, patienceMs: number): Promise<Outcome> {
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  return new Promise<Outcome>((resolve) => {
    let bodySent = false;
    let settled = false;
    const finish = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const headers: Record<string, string> = { ...r.headers };
    if (body !== undefined) {
      // Said outright: node:http frames a GET or DELETE body only when told how.
      if (r.chunked) headers['transfer-encoding'] = 'chunked';
      else headers['content-length'] = String(body.length);
    }
    let req: ReturnType<typeof request>;
    try {
      req = request({
        host: base.hostname,
        port: base.port,
        method: r.method,
        path: r.path.replace(/[^\u0021-\u00ff]/g, encodeURIComponent),
        headers,
        agent: false,
      });
    } catch (error) {
      return finish({ kind: 'no answer', error: `client refused to send: ${(error as Error).message}`, ms: 0, bodySent });
    }
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${patienceMs} ms`));
    }, patienceMs);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      res.on('data', (chunk: Buffer) => {
        if (kept < KEEP_BYTES) chunks.push(chunk);
        kept += chunk.length;
      });
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        finish({ kind: 'answer', status: res.statusCode ?? 0, headers: res.headers, text: bytes.toString('utf8'), ms: elapsed(), bytes });
      });
      res.on('error', (error) => finish({ kind: 'no answer', error: `response: ${error.message}`, ms: elapsed(), bodySent }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => finish({ kind: 'no answer', error: error.code ?? error.message, ms: elapsed(), bodySent }));
    if (body === undefined) req.end();
    else if (r.chunked) {
      // Two chunks, so the server sees a body of undeclared length arrive in parts.
      const half = Math.floor(body.length / 2);
      req.write(body.subarray(0, half));
      req.end(body.subarray(half), () => (bodySent = true));
    } else req.end(body, () => (bodySent = true));
  });
}
