import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout; each request's lines carry its `request_id`. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'loupe' }, timestamp: pino.stdTimeFunctions.isoTime });
}
