// What SQLite's full-text index of calls holds (Migration0011CallText, Migration0013CallFilterIndexes):
// one module, so that each migration indexes the same text. Not a migration itself: the list in
// ../index.ts names those.

/** A call's text to index: the first 60,000 characters of the string values of its inputs, and of its output (as on PostgreSQL). */
export const callTextBody = (call: string) => `${strings(`${call}.inputs`)} || char(10) || ${strings(`${call}.output`)}`;

/**
 * The first 60,000 characters of a JSON column's string values. Each value is cut to that length
 * before it is joined, and the join stops at the first 1,000 strings: a call of 24 MB of text must
 * not be copied whole into SQLite's memory to keep 60,000 characters of it.
 */
const strings = (column: string) =>
  `coalesce(substr((select group_concat(piece, char(10)) from (select substr(value, 1, 60000) as piece from json_tree(${column}) where type = 'text' limit 1000)), 1, 60000), '')`;
