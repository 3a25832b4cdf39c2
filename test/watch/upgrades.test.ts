/**
 * Nothing stays subscribed after a stream that never started or ended abruptly (issue 10,
 * "resource safety"), on both stores: refused and malformed upgrades (REST watch and graphql-ws),
 * a handshake abandoned half-way, and clients that vanish without a close frame. Subscriptions
 * are counted by the watch registry every REST watch and GraphQL subscription goes through.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { take, wsClient } from '../graphql/helpers.js';
import { openWatch, PERSONS, person, sleep, write } from './helpers.js';

const SUB = 'subscription { peopleExampleCom_v1alpha1_watchPersons { type object { metadata { name } } } }';

/**
 * Sends raw bytes, returns what the server answered before closing (or after `ms`). The server
 * closes right after a refusal; `ms` only bounds a connection it keeps (300 ms used to cut off
 * refusals that came later on a busy machine, e.g. the 401 after a password check).
 */
function raw(gw: TestGateway, text: string, ms = 5000): Promise<string> {
  const { port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1');
    let got = '';
    s.on('data', (d) => (got += String(d)));
    s.on('close', () => resolve(got));
    s.on('error', reject);
    s.write(text);
    setTimeout(() => s.destroy(), ms);
  });
}

async function settle(gw: TestGateway, want: number): Promise<number> {
  for (let i = 0; i < 100 && gw.watches.count() !== want; i++) await sleep(50);
  return gw.watches.count();
}

describe.each(STORES)('streams leave nothing subscribed (%s)', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw?.dispose());

  it('refused and malformed upgrades, REST watch and graphql-ws', async () => {
    const before = await settle(gw, gw.watches.count());
    const upgrade = (path: string, extra: string) =>
      `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`;
    const key = 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
    const answers = [
      await raw(gw, upgrade(`${PERSONS}?watch=true`, `Authorization: ${adminAuth}\r\n`)), // no key
      await raw(gw, upgrade(`${PERSONS}?watch=true`, `Authorization: ${adminAuth}\r\nSec-WebSocket-Key: short\r\n`)),
      await raw(gw, upgrade(`${PERSONS}?labelSelector=a%3D%3D%3Db`, `Authorization: ${adminAuth}\r\n${key}`)), // bad selector
      await raw(gw, upgrade(PERSONS, `Authorization: Basic ${Buffer.from('admin:wrong').toString('base64')}\r\n${key}`)), // wrong password
      await raw(gw, upgrade('/graphql', `Authorization: ${adminAuth}\r\n`)), // graphql-ws, no key
      await raw(gw, upgrade('/graphql', `Authorization: ${adminAuth}\r\nSec-WebSocket-Version: 99\r\n${key}`)),
    ];
    expect(answers.map((a) => a.slice(0, 12))).toEqual([
      'HTTP/1.1 400',
      'HTTP/1.1 400',
      'HTTP/1.1 400',
      'HTTP/1.1 401',
      'HTTP/1.1 400',
      'HTTP/1.1 400',
    ]);
    // a handshake that is sent only in part, then abandoned
    await raw(gw, `GET ${PERSONS} HTTP/1.1\r\nHost: x\r\nAuthorization: ${adminAuth}\r\nConnection: Upgrade\r\n`, 200);
    expect(await settle(gw, before)).toBe(before);
  });

  it('clients that vanish without a close frame release their subscriptions', async () => {
    const before = await settle(gw, gw.watches.count());
    const watchers = Array.from({ length: 5 }, () => openWatch(gw));
    await Promise.all(watchers.map((w) => w.opened));
    const clients = Array.from({ length: 3 }, () => wsClient(gw, { authorization: adminAuth }));
    const subs = clients.map((c) => c.iterate({ query: SUB }));
    // each subscription is running once it delivered the initial ADDED of a fresh object
    await write(gw, 'POST', PERSONS, person(`vanish-${kind}`));
    for (const s of subs) expect((await take(s, 1, 15_000)).length).toBe(1);
    expect(await settle(gw, before + 8)).toBe(before + 8);
    for (const w of watchers) w.ws.terminate(); // TCP gone, no close frame
    for (const c of clients) c.terminate();
    expect(await settle(gw, before)).toBe(before);
  });
});
