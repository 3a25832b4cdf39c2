/**
 * Request body reading: size limit, media type checks, JSON parsing (400 on malformed JSON).
 *
 * A body must say it is JSON (`application/json`, or a patch type for PATCH): a missing or other
 * Content-Type is 415 (docs/API.md §2 "Ambient credentials"). An HTML form (urlencoded, multipart,
 * text/plain) or a `fetch` with an untyped body is what a page of another origin can send without
 * a CORS preflight, with whatever credentials the browser holds; none of them is read as JSON.
 */
import type { IncomingMessage } from 'node:http';
import { BadRequest, UnsupportedMediaType } from '../errors/index.js';
import { readBody } from '../transport/read-body.js';
import { mediaType } from '../transport/media-type.js';
import { checkTextDepth } from '../json/depth.js';
import type { PatchType } from '../operations/types.js';
import type { GatewayLimits } from '../limits.js';

async function readText(req: IncomingMessage, limits: Readonly<GatewayLimits>): Promise<string> {
  return (await readBody(req, limits.bodyBytes, limits.discardBytes)).toString('utf8');
}

/** Parses a JSON body; its nesting depth is checked on the text first (nothing recursive runs on it before). */
function parse(text: string, limits: Readonly<GatewayLimits>): unknown {
  if (text.trim() === '') throw new BadRequest('the request body is empty; a JSON document is required');
  checkTextDepth(text, 'the request body', limits.jsonDepth);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new BadRequest(`malformed JSON: ${(e as Error).message}`);
  }
}

/** A JSON body for POST/PUT: `application/json` only (a missing Content-Type is 415 too), within the gateway's `limits`. */
export async function readJson(req: IncomingMessage, limits: Readonly<GatewayLimits>): Promise<unknown> {
  const type = mediaType(req);
  if (type !== 'application/json') {
    throw new UnsupportedMediaType(`Content-Type "${type || '(none)'}" is not supported; use application/json`);
  }
  return parse(await readText(req, limits), limits);
}

/** A PATCH body: merge patch or JSON patch, chosen by Content-Type. */
export async function readPatch(req: IncomingMessage, limits: Readonly<GatewayLimits>): Promise<{ patch: unknown; type: PatchType }> {
  const type = mediaType(req);
  let patchType: PatchType;
  if (type === 'application/merge-patch+json') patchType = 'merge';
  else if (type === 'application/json-patch+json') patchType = 'json';
  else {
    throw new UnsupportedMediaType(
      `Content-Type "${type || '(none)'}" is not supported for PATCH; use application/merge-patch+json or application/json-patch+json`,
    );
  }
  return { patch: parse(await readText(req, limits), limits), type: patchType };
}
