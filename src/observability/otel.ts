/**
 * The OpenTelemetry side of ./tracing.ts, imported only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
 * A NodeTracerProvider (AsyncLocalStorage context, W3C trace-context propagation) batching spans
 * to an OTLP/HTTP exporter: `http/protobuf` by default, `http/json` with
 * OTEL_EXPORTER_OTLP_PROTOCOL (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL). The exporters read the
 * endpoint, headers and timeout from the standard OTEL_EXPORTER_OTLP_* variables themselves.
 * Service name: OTEL_SERVICE_NAME, else `svc-gateway`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Logger } from 'pino';
import type { SpanAttributes, Tracing } from './tracing.js';

const VERSION = '0.1.0';

/** A bounded route for the span name: `{name}` stands for the object name (semconv http.route). */
export function routeOf(path: string): string {
  const s = path.split('/');
  // /apis/{g}/{v}/{plural}/{name}[/sub] and /api/{v}/{plural}/{name}[/sub]
  const nameAt = s[1] === 'apis' ? 5 : s[1] === 'api' ? 4 : -1;
  if (nameAt > 0 && s.length > nameAt && s[nameAt] !== '') s[nameAt] = '{name}';
  return s.join('/');
}

function recordError(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR });
}

export function createTracing(env: NodeJS.ProcessEnv, log: Logger): Tracing {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    log.warn({ protocol }, 'OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf and http/json are supported; using http/protobuf');
  }
  const exporter = protocol === 'http/json' ? new JsonExporter() : new ProtoExporter();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME?.trim() || 'svc-gateway',
      'service.version': VERSION,
    }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  // Global context manager and propagator (W3C traceparent/tracestate and baggage).
  provider.register();
  const tracer: Tracer = provider.getTracer('svc-gateway', VERSION);
  log.info({ endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT, protocol: protocol === 'http/json' ? protocol : 'http/protobuf' }, 'exporting traces over OTLP/HTTP');

  function serverSpan(req: IncomingMessage, upgrade: boolean): { span: Span; ctx: ReturnType<typeof context.active> } {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0]!;
    const route = routeOf(path);
    const span = tracer.startSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': method,
          'http.route': route,
          'url.path': path,
          'url.scheme': 'http',
          ...(upgrade ? { 'network.protocol.name': 'websocket' } : {}),
          ...(req.socket.remoteAddress ? { 'client.address': req.socket.remoteAddress } : {}),
        },
      },
      parent,
    );
    return { span, ctx: trace.setSpan(parent, span) };
  }

  return {
    request(req: IncomingMessage, res: ServerResponse, serve: () => Promise<void>): Promise<void> {
      const { span, ctx } = serverSpan(req, false);
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        span.setAttribute('http.response.status_code', res.statusCode);
        if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      };
      // A streamed response (watch) ends its span when it ends.
      res.once('finish', end);
      res.once('close', end);
      return context.with(ctx, serve).catch((e) => {
        recordError(span, e);
        throw e;
      });
    },
    async upgrade(req: IncomingMessage, serve: () => Promise<void>): Promise<void> {
      const { span, ctx } = serverSpan(req, true);
      try {
        await context.with(ctx, serve);
      } catch (e) {
        recordError(span, e);
        throw e;
      } finally {
        span.end();
      }
    },
    span<T>(name: string, kind: 'internal' | 'client', attributes: SpanAttributes, fn: () => Promise<T>): Promise<T> {
      // Store operations outside any request (background polls, start-up) make no traces.
      if (kind === 'client' && !trace.getSpan(context.active())) return fn();
      return tracer.startActiveSpan(name, { kind: kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL, attributes }, async (span) => {
        try {
          return await fn();
        } catch (e) {
          recordError(span, e);
          throw e;
        } finally {
          span.end();
        }
      });
    },
    async shutdown(): Promise<void> {
      try {
        await provider.shutdown();
      } catch (e) {
        log.warn({ err: (e as Error).message }, 'exporting the last spans failed');
      }
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
