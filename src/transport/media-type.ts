/**
 * The media type of a request body, and the rule that keeps ambient credentials from writing
 * (docs/API.md §2 "Ambient credentials"): a page of another origin can make a browser send a
 * POST without a CORS preflight only with no Content-Type or one of the three "simple" types of
 * an HTML form (urlencoded, multipart/form-data, text/plain), carrying whatever credentials the
 * browser holds for the gateway. No door acts on such a request: the REST and platform routes
 * read only JSON bodies (rest/body.ts), POST /graphql only `application/json`
 * (graphql/node-http.ts), and a plugin's custom POST route is refused here before it runs.
 */
import type { IncomingMessage } from 'node:http';
import { UnsupportedMediaType } from '../errors/index.js';

/** The media type of the request's Content-Type, lower case, without parameters ('' when none). */
export const mediaType = (req: IncomingMessage): string =>
  (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();

/** What an HTML form or a no-preflight fetch can send as a POST's Content-Type. */
const SIMPLE_TYPES: ReadonlySet<string> = new Set(['', 'application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/**
 * 415 for a POST that a page of another origin could have sent without a preflight; other
 * methods (PUT, PATCH, DELETE) always need one, so a browser never sends them cross-origin
 * unless CORS allows that origin.
 */
export function refuseSimplePost(req: IncomingMessage): void {
  if (req.method !== 'POST') return;
  const type = mediaType(req);
  if (SIMPLE_TYPES.has(type)) {
    throw new UnsupportedMediaType(`Content-Type "${type || '(none)'}" is not accepted on POST; send application/json`);
  }
}
