/**
 * OpenTelemetry traces (docs/API.md §10 "Traces"), lazily. This module imports nothing of
 * OpenTelemetry: only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set does `startTracing` import
 * ./otel.ts (the SDK, the OTLP/HTTP exporter). Until then every hook below is a null check, and
 * the wrappers that decorate objects at start-up (`tracedDoors`, `tracedStore`) return their
 * argument unchanged, so a gateway without tracing runs exactly the code it ran before.
 *
 * Spans: one SERVER span per HTTP request and WebSocket upgrade (parent: the incoming W3C
 * `traceparent`), one per GraphQL operation, one CLIENT span per store operation, nested by
 * async context.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { getOperationAST, type DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { decorateStore, isThenable } from '../store/decorate.js';
import type { Store } from '../store/types.js';

export type SpanAttributes = Record<string, string | number | boolean>;

/** What ./otel.ts provides once loaded. */
export interface Tracing {
  request(req: IncomingMessage, res: ServerResponse, serve: () => Promise<void>): Promise<void>;
  upgrade(req: IncomingMessage, serve: () => Promise<void>): Promise<void>;
  /** Runs `fn` inside a span of its own (child of the current one); records a throw. */
  span<T>(name: string, kind: 'internal' | 'client', attributes: SpanAttributes, fn: () => Promise<T>): Promise<T>;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

// Process-wide on purpose: OpenTelemetry's tracer provider and context manager are globals of
// the process, so every gateway in it shares one exporter, counted here (the last release flushes).
let active: Tracing | undefined;
let users = 0;

/** True when `env` asks for traces. */
export const tracingWanted = (env: NodeJS.ProcessEnv): boolean => !!env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();

/**
 * Starts tracing when `env` sets OTEL_EXPORTER_OTLP_ENDPOINT (once per process; every gateway
 * in it shares the exporter). Returns the function that releases it (the last release flushes).
 */
export async function startTracing(env: NodeJS.ProcessEnv, log: Logger): Promise<() => Promise<void>> {
  if (!tracingWanted(env)) return async () => undefined;
  if (!active) {
    const { createTracing } = await import('./otel.js');
    active ??= createTracing(env, log);
  }
  users++;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (--users > 0 || !active) return;
    const t = active;
    active = undefined;
    await t.shutdown();
  };
}

/** A GraphQL operation's span (semconv: `query`, `query Name`). */
export function traceOperation<T>(type: string, name: string | undefined, fn: () => Promise<T>): Promise<T> {
  if (!active) return fn();
  const attributes: SpanAttributes = { 'graphql.operation.type': type };
  if (name) attributes['graphql.operation.name'] = name;
  return active.span(name ? `${type} ${name}` : type, 'internal', attributes, fn);
}

/**
 * graphql-yoga (envelop) plugins that put each execution and subscription in an operation span;
 * none when not tracing.
 */
export function tracedGraphQL(): Plugin[] {
  if (!active) return [];
  const describe = (args: { document: DocumentNode; operationName?: string | null }) => {
    const op = getOperationAST(args.document, args.operationName ?? undefined);
    return { type: op?.operation ?? 'query', name: args.operationName ?? op?.name?.value };
  };
  return [
    {
      onExecute({ executeFn, setExecuteFn }) {
        setExecuteFn((args) => {
          const { type, name } = describe(args);
          return traceOperation(type, name, async () => executeFn(args));
        });
      },
      onSubscribe({ subscribeFn, setSubscribeFn }) {
        setSubscribeFn((args) => {
          const { type, name } = describe(args);
          return traceOperation(type, name, async () => subscribeFn(args));
        });
      },
    },
  ];
}

type Handle = (req: IncomingMessage, res: ServerResponse) => Promise<void>;
type Upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => Promise<void>;

/** The HTTP pipeline's two doors, each request in a SERVER span (unchanged when not tracing). */
export function tracedDoors<T extends { handle: Handle; upgrade: Upgrade }>(doors: T): T {
  const t = active;
  if (!t) return doors;
  const { handle, upgrade } = doors;
  return {
    ...doors,
    handle: (req: IncomingMessage, res: ServerResponse) => t.request(req, res, () => handle(req, res)),
    upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => t.upgrade(req, () => upgrade(req, socket, head)),
  };
}

/** `store` whose operations (and those of every ModelStore it hands out) are CLIENT spans. */
export function tracedStore(store: Store): Store {
  const t = active;
  if (!t) return store;
  const system = store.kind === 'mongodb' ? 'mongodb' : 'sqlite';
  // `model()` (registration, index builds) is no span of its own; the ModelStore's calls are.
  return decorateStore(store, ['model'], (collection) => (method, call) => {
    const attrs: SpanAttributes = { 'db.system.name': system, 'db.operation.name': method };
    if (collection) attrs['db.collection.name'] = collection;
    const name = `${system} ${method}`;
    return (...args) => {
      let result: unknown;
      const traced = t.span(name, 'client', attrs, async () => {
        result = call(...args);
        return isThenable(result) ? await result : result;
      });
      // A method that answers synchronously keeps doing so (its span is already ended).
      return isThenable(result) ? traced : (traced.catch(() => undefined), result);
    };
  });
}
