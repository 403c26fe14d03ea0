import { readFileSync } from 'node:fs';
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { newId } from '../domain/ids.ts';
import type { Logger } from '../log.ts';

export type ConnectionLimits = { max: number; perAddress: number };

/** Descriptors left for everything else: database connections, files, the log. */
const RESERVED_FILES = 128;

const REFUSED_STATUS = 503;
const REFUSED_REASON = 'This client address holds as many open connections as one address may; close some or retry later.';

/**
 * Caps the open connections of the server in all (`server.maxConnections`: Node drops the ones
 * above it) and per client address, so that one address cannot take every connection (or file
 * descriptor) of the process: the others, `/health` among them, still get through. A connection
 * over its address's cap is answered 503 with a reason at once and closed. The address is the
 * socket's peer: behind a proxy that is the proxy, whose own connection pool must fit the cap.
 */
export function limitConnections(server: Server, limits: ConnectionLimits, log: Logger): void {
  const files = openFileLimit();
  // Past the process's open-file limit, accepting fails for everyone, database connections too.
  const max = files === undefined ? limits.max : Math.max(1, Math.min(limits.max, files - RESERVED_FILES));
  if (max < limits.max) log.warn({ max_connections: max, open_file_limit: files }, 'LOUPE_MAX_CONNECTIONS lowered to fit the open-file limit (ulimit -n)');
  server.maxConnections = max;
  const byAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    const open = byAddress.get(address) ?? 0;
    if (open >= limits.perAddress) return refuse(socket, log);
    byAddress.set(address, open + 1);
    socket.once('close', () => {
      const left = (byAddress.get(address) ?? 1) - 1;
      if (left > 0) byAddress.set(address, left);
      else byAddress.delete(address);
    });
  });
}

function refuse(socket: Socket, log: Logger): void {
  const requestId = newId();
  const body = JSON.stringify({ reason: REFUSED_REASON, code: 'SERVICE_UNAVAILABLE', request_id: requestId });
  socket.on('error', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${REFUSED_STATUS} ${STATUS_CODES[REFUSED_STATUS]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      'Retry-After: 5\r\n' +
      'Connection: close\r\n\r\n' +
      body,
    () => socket.destroy(),
  );
  log.info({ request_id: requestId, status: REFUSED_STATUS, refused: 'connections per address' }, 'request');
}

/** The process's open-file limit (soft), where the system tells it (Linux). */
function openFileLimit(): number | undefined {
  try {
    const match = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}
