/**
 * The pages everyone may load, before authentication: the landing page `/`, `/favicon.ico`, the
 * API reference `/docs` and its files under /docs/assets/, GraphiQL (served for `GET /graphql`
 * with `Accept: text/html`) and GraphiQL's files under /graphql/assets/. They hold no data: the
 * documents /docs loads (/openapi/*) keep their access rule, and GraphiQL's requests to /graphql
 * are authorized field by field. Being public, no page ever answers 401 with a challenge, so a
 * browser never caches Basic credentials for the gateway's origin (docs/API.md §2, §8).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MethodNotAllowed } from '../errors/index.js';
import {
  AssetServer,
  DOCS_ASSET_FILES,
  DOCS_ASSETS,
  DOCS_PAGE,
  GRAPHIQL_ASSET_FILES,
  GRAPHIQL_ASSETS,
  GRAPHIQL_PAGE,
  LANDING_PAGE,
  sendPage,
  type Page,
} from './pages.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

function readOnly(path: string, handler: Handler): Handler {
  return async (req, res) => {
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') throw new MethodNotAllowed(`${method} is not allowed on ${path}`, ['GET', 'HEAD']);
    await handler(req, res);
  };
}

const pageHandler = (p: Page): Handler => async (req, res) => sendPage(p, req, res);

export function publicPages(): { endpoints: [string, Handler][]; graphiql: Handler } {
  const assets = new AssetServer(GRAPHIQL_ASSET_FILES);
  const docsAssets = new AssetServer(DOCS_ASSET_FILES);
  const icon = new AssetServer({ 'favicon.ico': DOCS_ASSET_FILES['favicon-32x32.png']! });
  const endpoints: [string, Handler][] = [
    ['/', readOnly('/', pageHandler(LANDING_PAGE))],
    ['/favicon.ico', readOnly('/favicon.ico', (req, res) => icon.serve('favicon.ico', req, res))],
    ['/docs', readOnly('/docs', pageHandler(DOCS_PAGE))],
  ];
  for (const [dir, server, files] of [
    [GRAPHIQL_ASSETS, assets, GRAPHIQL_ASSET_FILES],
    [DOCS_ASSETS, docsAssets, DOCS_ASSET_FILES],
  ] as const) {
    for (const name of Object.keys(files)) {
      const path = `${dir}/${name}`;
      endpoints.push([path, readOnly(path, (req, res) => server.serve(name, req, res))]);
    }
  }
  return { endpoints, graphiql: pageHandler(GRAPHIQL_PAGE) };
}
