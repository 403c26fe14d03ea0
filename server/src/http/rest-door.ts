import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { callTRPCProcedure, type AnyTRPCProcedure } from '@trpc/server';
import type { Context } from '../api/context.ts';
import { appRouter } from '../api/router.ts';
import { sendError, sendFailure } from './errors.ts';
import { carriesBody } from './request-kind.ts';
import type { RouteTable } from './route-table.ts';

/**
 * The REST door: how a request to a path of the API document reaches its procedure. By the time it
 * gets here the HTTP layer has checked its route and credentials and parsed its JSON body
 * (app.ts has the order). Then:
 *
 * 1. the route table (built from the API document, so from the procedures' meta) names the
 *    procedure and the path's parameters, percent-decoded;
 * 2. the input is the body (POST, PUT, PATCH) or the query string (GET, DELETE), with the path's
 *    parameters over it; nothing is coerced: `"7"` stays a string, and the schema refuses it;
 * 3. the procedure is called as tRPC's server-side caller and its HTTP adapter call it
 *    (`callTRPCProcedure`), with the same context the typed door makes, so both doors run the same
 *    middlewares and the same input and output validation (the caller's proxies, made per
 *    request, are left out);
 * 4. its output is the 200 body; an error leaves through the error policy as the one error
 *    envelope (`sendFailure`).
 *
 * A path that names no procedure goes on to the 404 handler.
 */
export function restDoor(routes: RouteTable, contextFor: (req: IncomingMessage, res: ServerResponse) => Context) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const match = routes.restMatch(req.method, req.path);
    if (!match) return next();
    if (!match.params) return sendError(req, res, 400, 'BAD_REQUEST', 'A path segment is not valid percent-encoded UTF-8.');
    const input = { ...(carriesBody(req.method) ? (req.body as object) : queryInput(req)), ...match.params };
    try {
      const output: unknown = await callTRPCProcedure({
        router: appRouter,
        path: match.procedure,
        type: procedureTypes.get(match.procedure)!,
        ctx: contextFor(req, res),
        getRawInput: async () => input,
        signal: undefined,
        batchIndex: 0,
      });
      res.statusCode = 200;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(output));
    } catch (error) {
      sendFailure(req, res, error);
    }
  };
}

/**
 * The query string as input: a repeated name gives an array, an empty value counts as absent.
 * Express parses it (node:querystring), so a name is a plain own key whatever it spells.
 */
function queryInput(req: Request): Record<string, unknown> {
  const input: Record<string, unknown> = Object.create(null); // a name `__proto__` stays a plain key
  for (const [name, value] of Object.entries(req.query)) if (value !== '') input[name] = value;
  return input;
}

/**
 * Each procedure's type (query, mutation) by its path, such as `annotationQueues.items.progress`:
 * the router keeps its procedures by that path at run time (its declared type nests them).
 */
const procedures = appRouter._def.procedures as unknown as Record<string, AnyTRPCProcedure>;
const procedureTypes = new Map(Object.entries(procedures).map(([path, procedure]) => [path, procedure._def.type]));
