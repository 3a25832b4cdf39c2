/**
 * REST watch over WebSocket on a collection path (docs/API.md §4), embedded store. The change feed
 * is per process for now; cross-process watch is the watch issue's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { adminAuth, call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openWatch, PERSONS } from '../watch/helpers.js';

/** A WebSocket watch on persons; `until(n)` waits for n events (about 2 s at most) and returns them. */
function open(gw: TestGateway, query = '') {
  const w = openWatch(gw, query);
  return { ...w, until: (n: number) => w.until((events) => events.length >= n, `${n} events`, 2_000).catch(() => w.events) };
}

describe('REST watch over WebSocket', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('embedded');
    await call(gw, 'POST', PERSONS, { metadata: { name: 'w1', labels: { 'people.example.com/t': 'a' } }, spec: { name: 'One' } });
  });
  afterAll(() => gw?.dispose());

  it('opens with ADDED for current matches, then streams changes; selectors turn transitions into ADDED/DELETED', async () => {
    const w = open(gw, '?watch=true&labelSelector=people.example.com/t=a');
    await w.opened;
    expect((await w.until(1))[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'w1' } } });
    await call(gw, 'POST', PERSONS, { metadata: { name: 'w2', labels: { 'people.example.com/t': 'a' } }, spec: { name: 'Two' } });
    await call(gw, 'POST', PERSONS, { metadata: { name: 'other' }, spec: { name: 'Other' } });
    await call(gw, 'PATCH', `${PERSONS}/w2`, { metadata: { labels: { 'people.example.com/t': 'b' } } }, { 'content-type': 'application/merge-patch+json' });
    await call(gw, 'PATCH', `${PERSONS}/other`, { metadata: { labels: { 'people.example.com/t': 'a' } } }, { 'content-type': 'application/merge-patch+json' });
    await call(gw, 'DELETE', `${PERSONS}/w1`);
    const events = await w.until(6);
    const end = (e: any) => `initial-events-end=${e.object.metadata.annotations['k8s.io/initial-events-end']}`;
    expect(events.map((e) => [e.type, e.type === 'BOOKMARK' ? end(e) : e.object.metadata.name])).toEqual([
      ['ADDED', 'w1'],
      ['BOOKMARK', 'initial-events-end=true'],
      ['ADDED', 'w2'],
      ['DELETED', 'w2'],
      ['ADDED', 'other'],
      ['DELETED', 'w1'],
    ]);
    expect(events[1].resourceVersion).toBe(events[0].resourceVersion);
    expect(new Set(events.slice(2).map((e) => e.resourceVersion)).size).toBe(4);
    w.ws.close();
  });

  it('resumes after a list resourceVersion without replaying the list', async () => {
    const list = await call(gw, 'GET', PERSONS);
    const w = open(gw, `?resourceVersion=${encodeURIComponent(list.body.resourceVersion)}`);
    await w.opened;
    await call(gw, 'POST', PERSONS, { metadata: { name: 'w3' }, spec: { name: 'Three' } });
    const events = await w.until(1);
    expect(events.map((e) => [e.type, e.object.metadata.name])).toEqual([['ADDED', 'w3']]);
    w.ws.close();
  });

  it('an unknown resume point gives an ERROR event with code 410 and closes', async () => {
    const w = open(gw, '?resourceVersion=99999999999');
    await w.opened;
    const events = await w.until(1);
    expect(events[0]).toMatchObject({ type: 'ERROR', object: { code: 410 } });
    await w.closed;
  });

  it('refuses bad selectors and unknown resources before upgrading', async () => {
    await expect(open(gw, '?fieldSelector=spec.age=3').opened).rejects.toThrow('HTTP 400');
    const bad = new WebSocket(`${gw.url.replace(/^http/, 'ws')}/apis/people.example.com/v1alpha1/nothings`, { headers: { authorization: adminAuth } });
    const status = await new Promise<number>((resolve) => bad.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0)));
    expect(status).toBe(404);
  });

  it('streams newline-delimited JSON for plain HTTP ?watch=true', async () => {
    const controller = new AbortController();
    const res = await fetch(`${gw.url}${PERSONS}?watch=true&fieldSelector=name=w3`, { signal: controller.signal, headers: { authorization: adminAuth } });
    expect(res.headers.get('content-type')).toContain('application/x-ndjson');
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    const first = JSON.parse(new TextDecoder().decode(value).split('\n')[0]!);
    expect(first).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'w3' } } });
    controller.abort();
  });
});
