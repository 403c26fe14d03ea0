import { describe, expect, it } from 'vitest';
import { accessLineText, loupeLogger, type AccessLine } from '../../../server/src/log.ts';

/** The line pino writes for `info(fields, 'request')` on Loupe's logger. */
function pinoLine(fields: AccessLine): string {
  const lines: string[] = [];
  loupeLogger('info', { write: (line: string) => lines.push(line) }).info(fields, 'request');
  return lines[0]!;
}

const withoutTime = (line: string) => line.replace(/,"time":"[^"]*"/, '');

describe('access lines', () => {
  it('are written byte for byte as pino writes them, escapes and non-ASCII included', () => {
    const cases: AccessLine[] = [
      { request_id: '01J0000000000000000000000', method: 'GET', url: '/inference/router/partner/models', status: 304, duration_ms: 0.123 },
      { request_id: 'client-id.1:2', method: 'POST', url: '/feedback/query?x="a\\b"&é=😀&c=\u0001', status: 499, duration_ms: 12 },
      { request_id: 'r', method: 'HEAD', url: `/${'long'.repeat(40)}\ud800`, status: 200, duration_ms: 1234.5 },
    ];
    for (const fields of cases) {
      const line = accessLineText(fields);
      expect(withoutTime(line)).toBe(withoutTime(pinoLine(fields)));
      expect(line).toMatch(/^\{"level":30,"time":"\d{4}-\d\d-\d\dT[\d:.]+Z",/);
      expect(JSON.parse(line)).toMatchObject({ ...fields, msg: 'request', service: 'loupe' });
    }
  });
});
