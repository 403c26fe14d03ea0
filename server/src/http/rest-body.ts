import type { NextFunction, Request, Response } from 'express';

/**
 * The REST adapter (trpc-to-openapi) builds a fetch Request for every call only to take its abort
 * signal from it, and gives that Request a body by serialising the parsed body again: for a batch
 * of 1,000 feedback records a 300 KB string and its encoded copy, pure garbage, since the
 * procedure is handed the parsed body itself. A non-enumerable `toJSON` makes that serialisation
 * empty; the body's own fields, which the adapter spreads into the input, are untouched. (The
 * typed door at /trpc is mounted before this and reads its body through that Request.)
 */
export function skipBodyReserialisation(req: Request, _res: Response, next: NextFunction): void {
  const body: unknown = req.body;
  if (body !== null && typeof body === 'object' && !Array.isArray(body) && !Object.hasOwn(body, 'toJSON')) {
    Object.defineProperty(body, 'toJSON', { value: serialisedAsNull, enumerable: false });
  }
  next();
}

function serialisedAsNull(): null {
  return null;
}
