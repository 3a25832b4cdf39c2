/**
 * Custom routes of started plugins (docs/API.md §7 "Custom routes"). A handler is a Fetch-API
 * function `(request, ctx) => Response | Promise<Response>`: the Node request becomes a
 * `Request` whose body is the request stream, and the `Response` body is piped to the socket
 * with `stream.pipeline`, so a slow client slows the handler's stream down (back pressure).
 * Authentication and authorization happen before a handler runs (server.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { RouteOpenAPI } from './code-loader.js';
import type { PluginRouteContext } from './plugin-context.js';

export type PluginRouteHandler = (request: Request, ctx: PluginRouteContext) => Response | Promise<Response>;

export interface MountedRoute {
  plugin: string;
  method: string;
  /** Literal segments, or `{name}` for a parameter. */
  segments: string[];
  handler: PluginRouteHandler;
  /** How the route appears in the OpenAPI documents, when the plugin describes it. */
  openapi?: RouteOpenAPI;
}

export interface RouteMatch {
  route: MountedRoute;
  params: Record<string, string>;
}

const paramName = (seg: string) => (seg.startsWith('{') && seg.endsWith('}') ? seg.slice(1, -1) : undefined);

/** Routes by plugin; matching prefers literal segments over parameters, left to right. */
export class PluginRouteTable {
  private routes: MountedRoute[] = [];
  /** Bumped on every mount and unmount (the API documents are cached per version). */
  version = 0;

  /** The mounted routes, in mount order. */
  list(): readonly MountedRoute[] {
    return this.routes;
  }

  /** Refuses (throws) a route that has the same method and shape as a mounted one. */
  mount(plugin: string, routes: MountedRoute[]): void {
    const shape = (r: MountedRoute) => `${r.method} ${r.segments.map((s) => (paramName(s) ? '{}' : s)).join('/')}`;
    const taken = new Map(this.routes.map((r) => [shape(r), r.plugin]));
    for (const r of routes) {
      const owner = taken.get(shape(r));
      if (owner) throw new Error(`route ${r.method} /${r.segments.join('/')} is already served by plugin "${owner}"`);
      taken.set(shape(r), plugin);
    }
    this.routes = [...this.routes, ...routes];
    this.version++;
  }

  unmount(plugin: string): void {
    this.routes = this.routes.filter((r) => r.plugin !== plugin);
    this.version++;
  }

  /** The route serving `method` + raw `pathname`, or undefined. HEAD falls back to GET. */
  match(method: string, pathname: string): RouteMatch | undefined {
    const parts = pathname.slice(1).split('/');
    const found = this.find(method, parts) ?? (method === 'HEAD' ? this.find('GET', parts) : undefined);
    return found;
  }

  private find(method: string, parts: string[]): RouteMatch | undefined {
    let best: { m: RouteMatch; score: string } | undefined;
    for (const route of this.routes) {
      if (route.method !== method) continue;
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      const score = route.segments.map((s) => (paramName(s) ? '0' : '1')).join('');
      if (!best || score > best.score) best = { m: { route, params }, score };
    }
    return best?.m;
  }
}

function matchSegments(segments: string[], parts: string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const name = paramName(segments[i]!);
    if (name) {
      try {
        params[name] = decodeURIComponent(parts[i]!);
      } catch {
        return undefined;
      }
    } else if (segments[i] !== parts[i]) return undefined;
  }
  return params;
}

/** The Node request as a Fetch `Request`; its body streams from the socket. */
export function toFetchRequest(req: IncomingMessage, origin: string): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
  }
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(new URL(req.url ?? '/', origin), {
    method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    duplex: 'half',
  } as RequestInit);
}

/** Writes a Fetch `Response` to the Node response, streaming the body with back pressure. */
export async function sendFetchResponse(res: ServerResponse, response: Response, head: boolean): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    if (key === 'set-cookie') return;
    headers[key] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers['set-cookie'] = cookies;
  res.writeHead(response.status, response.statusText || undefined, headers);
  if (!response.body || head) {
    res.end();
    await response.body?.cancel();
    return;
  }
  await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>), res);
}
