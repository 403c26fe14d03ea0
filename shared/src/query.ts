import { z } from 'zod';

/** `limit` and `offset` of every query; the server also caps `limit` by its configured maximum. */
export const Limit = z.int().min(1).meta({ description: 'default 100, at most the server limit (10,000 by default)' });
export const MAX_OFFSET = 100_000;
export const Offset = z
  .int()
  .min(0)
  .max(MAX_OFFSET)
  .meta({ description: `at most ${MAX_OFFSET.toLocaleString('en')}: a deeper page costs a scan of every row before it` });

/** The cursor of a page (contract 5.6): opaque, given back by the page before as `next_cursor`. */
export const Cursor = z
  .string()
  .min(1)
  .max(4096)
  .meta({ description: 'next_cursor of the previous page, unchanged; not with offset' });
/** Where the page after this one starts; null on the last page. */
export const NextCursor = z.string().nullable().meta({
  description:
    'cursor of the next page in the same order and filter; null when there is none. A page may hold fewer rows than ' +
    '`limit` and still name a next page: an answer holds at most the server\'s byte budget (LOUPE_MAX_RESPONSE_BYTES)',
});

/**
 * Values of one query filter (ids, names, states): bounded, so that a query stays a handful of
 * bound parameters (drivers refuse statements past ~32,000) and an index lookup per value.
 */
export const MAX_FILTER_VALUES = 1000;
export function filterValues<T extends z.ZodType>(value: T) {
  return z.array(value).max(MAX_FILTER_VALUES);
}
/** A string a filter matches exactly: as long as any stored value can be. */
export const FilterString = z.string().max(1024);

/** An identifier a client may choose (call ids): no `/`, so it fits in a ref. */
export const ClientId = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1-128 of [A-Za-z0-9._:-]');

/** A JSON value, as stored and returned verbatim. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * Arbitrary JSON. Written out rather than `z.json()` so that the API document has one schema of
 * that name which refers to itself; `z.json()` is a fresh anonymous recursion at every use, which
 * reached the document as several identical unnamed schemas.
 */
export const JsonValue: z.ZodType<Json> = z
  .lazy(() => z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(JsonValue), z.record(z.string(), JsonValue)]))
  .meta({ id: 'JsonValue', description: 'any JSON value' });
export const JsonObject = z.record(z.string(), JsonValue);
