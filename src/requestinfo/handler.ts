/**
 * The shape of every route handler, parameterised by what it is told about the request. The
 * pipeline's route table (pipeline/routes.ts) hands each handler its full RouteContext; handlers
 * below the pipeline (observability/metrics.ts, apidocs/routes.ts) declare only the part they read, so they
 * need not import the pipeline.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export type RequestHandler<Context> = (req: IncomingMessage, res: ServerResponse, rc: Context) => Promise<void>;
