/**
 * A plugin custom-route handler that throws (issue 22, item 10): the client gets a bare 500
 * application/problem+json (no message, no stack), and the server logs the error with its
 * stack at level error. The store plays no part, so one store suffices.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { manifest, pluginsDir, type PluginsDir } from './fixtures.js';

const BASE = '/apis/console.api.oops.example.com/v1';

describe('a custom route handler that throws', () => {
  let dir: PluginsDir;
  let gw: TestGateway;
  const lines: any[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      done();
    },
  });
  beforeAll(async () => {
    dir = await pluginsDir();
    await dir.write('oops', {
      'plugin.yaml': manifest({ name: 'oops', group: 'oops.example.com' }),
      'index.mjs': `function explodeDeep() { throw new Error('db password is hunter2-internal'); }
export default { routes: [
  { method: 'GET', path: '${BASE}/boom', handler: () => explodeDeep() },
  { method: 'GET', path: '${BASE}/later', handler: async () => { await null; throw new TypeError('async failure detail'); } },
  { method: 'GET', path: '${BASE}/string', handler: () => { throw 'a bare string'; } },
] };\n`,
    });
    gw = await startTestGateway('embedded', { pluginsDir: dir.dir, logger: pino({ level: 'info' }, sink) });
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it.each([
    ['boom', 'db password is hunter2-internal', 'explodeDeep'],
    ['later', 'async failure detail', 'index.mjs'],
    ['string', 'a bare string', 'serve-route'],
  ])('%s: 500 problem+json without detail; the stack is logged server side', async (route, message, inStack) => {
    const before = lines.length;
    const r = await call(gw, 'GET', `${BASE}/${route}`);
    expect(r.status).toBe(500);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(r.body).toMatchObject({ status: 500, title: 'Internal Server Error', instance: `${BASE}/${route}` });
    const text = JSON.stringify(r.body);
    expect(text).not.toContain(message);
    expect(text).not.toMatch(/\bat \S+ \(|\.mjs|\.ts:\d/);

    const logged = lines.slice(before).find((l) => l.msg === 'custom route handler failed');
    expect(logged, JSON.stringify(lines.slice(before))).toBeDefined();
    expect(logged.level).toBe(50);
    expect(logged.plugin).toBe('oops');
    expect(logged.route).toBe(`GET ${BASE}/${route}`);
    expect(logged.err.message).toContain(message);
    expect(logged.err.stack).toContain(inStack);
    expect(logged.err.stack).toMatch(/\n\s+at /);
  });
});
