import { z } from 'zod';

/** `limit` and `offset` of every query; the server also caps `limit` by its configured maximum. */
export const Limit = z.int().min(1).meta({ description: 'default 100, at most the server limit (10,000 by default)' });
export const Offset = z.int().min(0);

/** An identifier a client may choose (call ids): no `/`, so it fits in a ref. */
export const ClientId = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1-128 of [A-Za-z0-9._:-]');

/** Arbitrary JSON, as stored and returned verbatim. */
export const JsonValue = z.json();
export const JsonObject = z.record(z.string(), z.json());
