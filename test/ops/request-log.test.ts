/**
 * The request log (docs/API.md §10): one pino line per request at info with method, path (never the
 * query string), status, duration (ms) and username; readable lines on a terminal.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { watchSocket } from '../helpers/rbac.js';
import { adminAuth } from '../helpers/gateway.js';
import { formatLine } from '../../src/observability/pretty.js';

const PERSONS = '/apis/people.example.com/v1alpha1/persons';

describe('request log (embedded)', () => {
  let gw: TestGateway;
  const logged: any[] = [];
  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    gw = await startTestGateway('embedded', { logger, corsOrigins: ['http://app.example.test'] });
  });
  afterAll(async () => {
    await gw?.dispose();
  });

  const requests = () => logged.filter((l) => l.msg === 'request');
  async function settled(n: number) {
    for (let i = 0; i < 100 && requests().length < n; i++) await new Promise((r) => setTimeout(r, 20));
    return requests();
  }

  it('one info line per request: method, path without query, status, duration, username', async () => {
    const before = requests().length;
    expect((await call(gw, 'GET', `${PERSONS}?labelSelector=secret-in-query`)).status).toBe(200);
    expect((await call(gw, 'POST', PERSONS, { metadata: { name: 'logged' }, spec: { name: 'L' } })).status).toBe(201);
    expect((await call(gw, 'GET', PERSONS, undefined, ANONYMOUSLY)).status).toBe(401);
    expect((await call(gw, 'POST', '/graphql', { query: '{ __typename }' })).status).toBe(200);
    expect((await call(gw, 'GET', '/livez', undefined, ANONYMOUSLY)).status).toBe(200);
    const lines = (await settled(before + 5)).slice(before);
    expect(lines.map((l) => [l.level, l.method, l.path, l.status, l.username])).toEqual([
      [30, 'GET', PERSONS, 200, 'admin'],
      [30, 'POST', PERSONS, 201, 'admin'],
      [30, 'GET', PERSONS, 401, 'anonymous'],
      [30, 'POST', '/graphql', 200, 'admin'],
      [30, 'GET', '/livez', 200, 'anonymous'],
    ]);
    for (const l of lines) expect(typeof l.duration === 'number' && l.duration >= 0).toBe(true);
    expect(JSON.stringify(logged)).not.toContain('secret-in-query');
  });

  it('the console\'s files and CORS preflights, answered outside the pipeline, get their lines too', async () => {
    const before = requests().length;
    expect((await call(gw, 'GET', '/console/', undefined, ANONYMOUSLY)).status).toBe(200);
    expect((await call(gw, 'GET', '/console/assets/app.js', undefined, ANONYMOUSLY)).status).toBe(200);
    const pre = await call(gw, 'OPTIONS', PERSONS, undefined, { ...ANONYMOUSLY, origin: 'http://app.example.test', 'access-control-request-method': 'POST' });
    expect(pre.status).toBe(204);
    const lines = (await settled(before + 3)).slice(before);
    expect(lines.map((l) => [l.method, l.path, l.status, l.username])).toEqual([
      ['GET', '/console/', 200, 'anonymous'],
      ['GET', '/console/assets/app.js', 200, 'anonymous'],
      ['OPTIONS', PERSONS, 204, 'anonymous'],
    ]);
  });

  it('a WebSocket watch gets its line when the upgrade is answered', async () => {
    const before = requests().length;
    const w = watchSocket(`${gw.url}${PERSONS}`, adminAuth);
    expect(await w.opened).toBe(101);
    const lines = (await settled(before + 1)).slice(before);
    expect(lines.map((l) => [l.method, l.path, l.status, l.username])).toEqual([['GET', PERSONS, 101, 'admin']]);
    w.ws.close();
  });

  it('on a terminal the JSON line becomes a readable one', () => {
    const text = formatLine(
      JSON.stringify({ level: 30, time: Date.UTC(2026, 0, 1, 8, 30, 1, 5), pid: 1, hostname: 'h', msg: 'request', method: 'GET', path: '/livez', status: 200, duration: 0.4, username: 'admin' }),
    );
    expect(text).toBe('08:30:01.005 INFO  request method=GET path=/livez status=200 duration=0.4 username=admin\n');
  });
});
