/**
 * Marks a REST body that was not valid JSON. The HTTP layer sets it instead of answering at once,
 * so that protectedProcedure can check credentials first (401 before 400, contract 4.1); a symbol
 * key survives the REST adapter's spread of body and path parameters.
 */
export const MALFORMED_BODY = Symbol('loupe.malformedBody');

export function malformedJsonReason(detail: string): string {
  return `Malformed JSON in the request body: ${detail}.`;
}
