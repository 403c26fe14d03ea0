import { z } from 'zod';

/** RFC 3339 UTC with millisecond precision and a `Z` suffix, as the server writes every timestamp. */
export const Timestamp = z.iso.datetime({ offset: false, precision: 3 }).meta({ example: '2026-11-22T10:04:05.123Z' });

export function toTimestamp(date: Date | number): string {
  return new Date(date).toISOString();
}
