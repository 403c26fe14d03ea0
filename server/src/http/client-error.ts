import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { newId } from '../domain/ids.ts';
import type { Logger } from '../log.ts';

type ParserError = Error & { code?: string };

const ANSWERS: Record<string, { status: number; code: string; reason: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
    reason: 'The request headers are larger than the server accepts (16 KiB in all).',
  },
  HPE_REQUEST_TIMEOUT: { status: 408, code: 'REQUEST_TIMEOUT', reason: 'The request was not received in time.' },
  // Node's headersTimeout and requestTimeout (a connection that sent no complete request in time).
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'REQUEST_TIMEOUT', reason: 'The request was not received in time.' },
};
const MALFORMED = { status: 400, code: 'BAD_REQUEST', reason: 'The request is not valid HTTP/1.1.' };

/**
 * Answers requests that Node's HTTP parser refused before any request object existed (headers too
 * large, malformed HTTP): the same JSON error shape and X-Request-Id as every other answer, and an
 * access-log line, instead of Node's empty default answer.
 */
export function clientErrorAnswer(log: Logger) {
  return (error: ParserError, socket: Duplex): void => {
    // The peer is gone, or a response is already under way on this socket: nothing to answer.
    if (error.code === 'ECONNRESET' || !socket.writable || (socket as Duplex & { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const { status, code, reason } = ANSWERS[error.code ?? ''] ?? MALFORMED;
    const requestId = newId();
    const body = JSON.stringify({ reason, code, request_id: requestId });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
    log.info({ request_id: requestId, status, parser_error: error.code ?? null }, 'request');
  };
}
