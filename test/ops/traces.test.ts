/**
 * OpenTelemetry traces (docs/API.md §10, issue 22 item 6) through a real OTLP/HTTP receiver: a
 * node http server on loopback that records what the gateway's exporter posts. A REST request
 * and a GraphQL request carrying the same W3C `traceparent` yield spans of that trace: the HTTP
 * SERVER spans (children of the incoming span), the GraphQL operation span and store CLIENT
 * spans below them, with the service name. http/json is decoded; http/protobuf (the default) is
 * checked for its media type and the trace id's bytes. Both stores.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { gql } from '../graphql/helpers.js';

interface Posted {
  path: string;
  type: string;
  body: Buffer;
}

const PERSONS = '/apis/people.example.com/v1alpha1/persons';
const OTEL_VARS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_SERVICE_NAME'];

async function receiver(): Promise<{ server: Server; url: string; posts: Posted[] }> {
  const posts: Posted[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', type: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' });
      res.end(String(req.headers['content-type']).includes('json') ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts };
}

const randomHex = (bytes: number) => Array.from({ length: bytes }, () => Math.floor(Math.random() * 256).toString(16).padStart(2, '0')).join('');

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

function spansOf(posts: Posted[]): { service: string[]; spans: JsonSpan[] } {
  const service: string[] = [];
  const spans: JsonSpan[] = [];
  for (const p of posts) {
    const doc = JSON.parse(p.body.toString('utf8'));
    for (const rs of doc.resourceSpans ?? []) {
      const name = rs.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue;
      if (name) service.push(name);
      for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans);
    }
  }
  return { service, spans };
}

const attr = (s: JsonSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? v.intValue ?? v.boolValue);
};

const SERVER = 2;
const CLIENT = 3;

describe.each(STORES)('traces over OTLP/HTTP (%s)', (kind) => {
  let saved: Record<string, string | undefined>;
  let rx: Awaited<ReturnType<typeof receiver>>;
  let gw: TestGateway | undefined;
  beforeEach(async () => {
    saved = Object.fromEntries(OTEL_VARS.map((k) => [k, process.env[k]]));
    rx = await receiver();
  });
  afterEach(async () => {
    await gw?.dispose();
    gw = undefined;
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await new Promise((r) => rx.server.close(r));
  });

  it('http/json: REST and GraphQL requests with a traceparent give HTTP, GraphQL and store spans of that trace', async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    process.env.OTEL_SERVICE_NAME = `svc-test-${kind}`;
    gw = await startTestGateway(kind);
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'traced' }, spec: { name: 'T' } })).status).toBe(201);

    const traceId = randomHex(16);
    const parentId = randomHex(8);
    const traceparent = `00-${traceId}-${parentId}-01`;
    const r = await call(gw, 'GET', `${PERSONS}/traced`, undefined, { traceparent });
    expect(r.status).toBe(200);
    const q = await gql(gw, '{ peopleExampleCom_v1alpha1_person(name: "traced") { metadata { name } } }', undefined, {
      traceparent,
      authorization: adminAuth,
    });
    expect(q.body.data.peopleExampleCom_v1alpha1_person.metadata.name).toBe('traced');

    await gw.dispose(); // flushes the batch
    gw = undefined;
    expect(rx.posts.length).toBeGreaterThan(0);
    for (const p of rx.posts) {
      expect(p.path).toBe('/v1/traces');
      expect(p.type).toContain('application/json');
    }
    const { service, spans } = spansOf(rx.posts);
    expect(new Set(service)).toEqual(new Set([`svc-test-${kind}`]));
    const ours = spans.filter((s) => s.traceId === traceId);
    const servers = ours.filter((s) => s.kind === SERVER);
    expect(servers.map((s) => s.name).sort()).toEqual(['GET /apis/people.example.com/v1alpha1/persons/{name}', 'POST /graphql']);
    for (const s of servers) expect(s.parentSpanId).toBe(parentId);
    const rest = servers.find((s) => s.name.startsWith('GET'))!;
    expect(attr(rest, 'http.response.status_code')).toBe(200);
    expect(attr(rest, 'http.request.method')).toBe('GET');
    const graphqlServer = servers.find((s) => s.name.startsWith('POST'))!;

    const operation = ours.find((s) => attr(s, 'graphql.operation.type') === 'query');
    expect(operation, JSON.stringify(ours.map((s) => s.name))).toBeDefined();
    expect(operation!.parentSpanId).toBe(graphqlServer.spanId);

    const stores = ours.filter((s) => s.kind === CLIENT);
    const system = kind === 'mongodb' ? 'mongodb' : 'sqlite';
    expect(stores.find((s) => s.parentSpanId === rest.spanId && s.name === `${system} get`), 'the REST get reads the store').toBeDefined();
    expect(stores.find((s) => s.parentSpanId === operation!.spanId && s.name === `${system} get`), 'the GraphQL query reads the store').toBeDefined();
    for (const s of stores) expect(attr(s, 'db.system.name')).toBe(system);
    // the earlier request without a traceparent is a trace of its own
    const create = spans.find((s) => s.kind === SERVER && s.name === `POST ${PERSONS}`);
    expect(create).toBeDefined();
    expect(create!.traceId).not.toBe(traceId);
    expect(create!.parentSpanId ?? '').toBe('');
  });

  it('http/protobuf by default, with the default service name', async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.url;
    delete process.env.OTEL_EXPORTER_OTLP_PROTOCOL;
    delete process.env.OTEL_SERVICE_NAME;
    gw = await startTestGateway(kind);
    const traceId = randomHex(16);
    expect((await call(gw, 'GET', PERSONS, undefined, { traceparent: `00-${traceId}-${randomHex(8)}-01` })).status).toBe(200);
    await gw.dispose();
    gw = undefined;
    expect(rx.posts.length).toBeGreaterThan(0);
    const all = Buffer.concat(rx.posts.map((p) => p.body));
    for (const p of rx.posts) {
      expect(p.path).toBe('/v1/traces');
      expect(p.type).toBe('application/x-protobuf');
    }
    expect(all.includes(Buffer.from(traceId, 'hex'))).toBe(true);
    expect(all.includes(Buffer.from('svc-gateway'))).toBe(true);
  });
});

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('only src/observability/otel.ts (imported dynamically) imports OpenTelemetry', async () => {
    const { readdir, readFile } = await import('node:fs/promises');
    const root = join(import.meta.dirname, '../../src');
    const files = (await readdir(root, { recursive: true })).filter((f) => /\.ts$/.test(f));
    const importing = [];
    for (const f of files) if (/from '@opentelemetry\//.test(await readFile(join(root, f), 'utf8'))) importing.push(f);
    expect(importing).toEqual([join('observability', 'otel.ts')]);
    const tracing = await readFile(join(root, 'observability', 'tracing.ts'), 'utf8');
    expect(tracing).toContain("await import('./otel.js')");
  });

  it('nothing is exported, and the wrappers hand back what they were given', async () => {
    const rx = await receiver();
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    try {
      const { tracedStore, tracedDoors } = await import('../../src/observability/tracing.js');
      const doors = { handle: async () => undefined, upgrade: async () => undefined };
      expect(tracedDoors(doors)).toBe(doors);
      const gw = await startTestGateway('embedded');
      try {
        expect((await call(gw, 'GET', PERSONS, undefined, { traceparent: `00-${randomHex(16)}-${randomHex(8)}-01` })).status).toBe(200);
        const fake = { kind: 'x' } as never;
        expect(tracedStore(fake)).toBe(fake);
      } finally {
        await gw.dispose();
      }
      expect(rx.posts).toEqual([]);
    } finally {
      if (saved !== undefined) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
      await new Promise((r) => rx.server.close(r));
    }
  });
});
