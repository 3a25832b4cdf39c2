/**
 * Shared fan-out (issue 10 benchmark work, operations/watch.ts): a change is translated once per
 * (model, selector) and the result handed to every watcher of that selector. These tests pin
 * what must stay per watcher: a resourceNames restriction, the before/after transitions of each
 * selector, the list→watch reconciliation, and watchers joining, leaving or resuming while
 * others of the same selector keep streaming. Both stores, real gateways and WebSockets.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Attributes, Authorizer } from '../../src/identity/authorizer.js';
import { allowAll } from '../../src/identity/authorizer.js';
import { adminAuth, call, startTestGateway, STORES, type TestGateway } from '../helpers/gateway.js';
import { MERGE, openWatch, person, PERSONS, sleep, write, type Watcher } from './helpers.js';

const LABEL = 'people.example.com/fan';
const seq = (w: Watcher) => w.changes().map((e) => `${e.type} ${e.object.metadata.name}`);
const relabel = (gw: TestGateway, name: string, value: string) =>
  write(gw, 'PATCH', `${PERSONS}/${name}`, { metadata: { labels: { [LABEL]: value } } }, MERGE);

async function currentVersion(gw: TestGateway): Promise<string> {
  const r = await call(gw, 'GET', `${PERSONS}?size=1`, undefined, { authorization: adminAuth });
  return r.body.resourceVersion as string;
}

describe.each(STORES)('shared fan-out (%s)', (kind) => {
  let gw: TestGateway;
  // Anonymous callers may watch only `<kind>-r-b` (a resourceNames grant); everyone else anything.
  const authorizer: Authorizer = {
    async authorize(a: Attributes) {
      if (a.verb === 'watch' && a.caller.username === 'anonymous') {
        return { allowed: false, names: new Set([`${kind}-r-b`]), reason: 'test: resourceNames' };
      }
      return allowAll.authorize(a);
    },
  };
  beforeAll(async () => {
    gw = await startTestGateway(kind, { authorizer });
  });
  afterAll(() => gw?.dispose());
  afterEach(() => gw?.watches.configure());

  it('equal selectors, one watcher restricted by resourceNames: each gets its own events; another selector its own transitions', async () => {
    const [a, b] = [`${kind}-r-a`, `${kind}-r-b`];
    const rv = await currentVersion(gw);
    const sel = `?labelSelector=${LABEL}=r&resourceVersion=${rv}`;
    const full = openWatch(gw, sel);
    const restricted = openWatch(gw, sel, {});
    const all = openWatch(gw, `?resourceVersion=${rv}&labelSelector=${LABEL}`);
    await Promise.all([full.opened, restricted.opened, all.opened]);
    await write(gw, 'POST', PERSONS, person(a, { [LABEL]: 'r' }));
    await write(gw, 'POST', PERSONS, person(b, { [LABEL]: 'r' }));
    await relabel(gw, a, 'other'); // leaves `=r`
    await relabel(gw, b, 'other');
    await relabel(gw, b, 'r'); // enters again
    await write(gw, 'DELETE', `${PERSONS}/${a}`); // outside `=r`: nothing for the first two
    await write(gw, 'DELETE', `${PERSONS}/${b}`);
    await all.until((ev) => ev.filter((e) => e.type !== 'BOOKMARK').length >= 7, 'every change on the label-existence watcher');
    await full.until((ev) => ev.filter((e) => e.type !== 'BOOKMARK').length >= 6, 'the full watcher');
    await restricted.until((ev) => ev.filter((e) => e.type !== 'BOOKMARK').length >= 3, 'the restricted watcher');
    await sleep(200);
    expect(seq(full)).toEqual([`ADDED ${a}`, `ADDED ${b}`, `DELETED ${a}`, `DELETED ${b}`, `ADDED ${b}`, `DELETED ${b}`]);
    expect(seq(restricted)).toEqual([`ADDED ${b}`, `DELETED ${b}`, `ADDED ${b}`, `DELETED ${b}`]);
    expect(seq(all)).toEqual([`ADDED ${a}`, `ADDED ${b}`, `MODIFIED ${a}`, `MODIFIED ${b}`, `MODIFIED ${b}`, `DELETED ${a}`, `DELETED ${b}`]);
    // The restricted watcher and the full one received the same event text for `b` (shared),
    // and never anything about `a`.
    expect(restricted.changes().every((e) => e.object.metadata.name === b)).toBe(true);
    const fullB = full.changes().filter((e) => e.object.metadata.name === b);
    expect(restricted.changes()).toEqual(fullB);
    for (const w of [full, restricted, all]) w.close();
  });

  it('watchers join, leave and resume a selector while others of it keep streaming', async () => {
    const n = (i: number) => `${kind}-j-${i}`;
    const sel = `labelSelector=${LABEL}=j`;
    const first = openWatch(gw, `?${sel}&resourceVersion=${await currentVersion(gw)}`);
    await first.opened;
    await write(gw, 'POST', PERSONS, person(n(1), { [LABEL]: 'j' }));
    await first.until((ev) => ev.length >= 1, 'ADDED 1');
    const resumeAt = first.changes()[0].resourceVersion as string;
    // Joins with a list: n(1) arrives as its initial ADDED; then it follows the feed.
    const joiner = openWatch(gw, `?${sel}`);
    await joiner.until((ev) => ev.length >= 1, 'the initial list of the joiner');
    await write(gw, 'POST', PERSONS, person(n(2), { [LABEL]: 'j' }));
    await relabel(gw, n(1), 'gone');
    await joiner.until((ev) => ev.filter((e) => e.type !== 'BOOKMARK').length >= 3, 'the joiner\'s live events');
    joiner.close();
    await joiner.closed;
    const joinerSaw = seq(joiner);
    await write(gw, 'POST', PERSONS, person(n(3), { [LABEL]: 'j' }));
    await relabel(gw, n(2), 'gone');
    // Resumes from the first change: replays the same transitions from the log.
    const resumed = openWatch(gw, `?${sel}&resourceVersion=${resumeAt}`);
    // A late joiner with a list sees only what matches now.
    const late = openWatch(gw, `?${sel}`);
    await late.until((ev) => ev.length >= 1, 'the late joiner\'s list');
    await resumed.until((ev) => ev.filter((e) => e.type !== 'BOOKMARK').length >= 4, 'the resumed replay');
    await write(gw, 'POST', PERSONS, person(n(4), { [LABEL]: 'j' }));
    for (const w of [first, resumed, late]) await w.until((ev) => ev.some((e) => e.object?.metadata?.name === n(4)), `ADDED ${n(4)}`);
    await sleep(200);
    expect(seq(first)).toEqual([`ADDED ${n(1)}`, `ADDED ${n(2)}`, `DELETED ${n(1)}`, `ADDED ${n(3)}`, `DELETED ${n(2)}`, `ADDED ${n(4)}`]);
    expect(joinerSaw).toEqual([`ADDED ${n(1)}`, `ADDED ${n(2)}`, `DELETED ${n(1)}`]);
    expect(seq(joiner)).toEqual(joinerSaw); // nothing after it left
    expect(seq(resumed)).toEqual([`ADDED ${n(2)}`, `DELETED ${n(1)}`, `ADDED ${n(3)}`, `DELETED ${n(2)}`, `ADDED ${n(4)}`]);
    expect(seq(late)).toEqual([`ADDED ${n(3)}`, `ADDED ${n(4)}`]);
    // Every watcher of the selector received the same versions of the objects.
    const versions = (w: Watcher) => w.changes().map((e) => `${e.object.metadata.name}@${e.object.metadata.version}`);
    expect(versions(resumed)).toEqual(versions(first).slice(1));
    for (const w of [first, resumed, late]) w.close();
  });

  it('a watcher the gate keeps every change from still gets BOOKMARKs at the latest position', async () => {
    gw.watches.configure({ bookmarkMs: 100 });
    const w = openWatch(gw, `?labelSelector=${LABEL}=nothing&resourceVersion=${await currentVersion(gw)}&allowWatchBookmarks=true`);
    await w.opened;
    for (let i = 0; i < 3; i++) await write(gw, 'POST', PERSONS, person(`${kind}-bm-${i}`, { [LABEL]: 'elsewhere' }));
    const now = await currentVersion(gw);
    await w.until(
      (ev) => ev.some((e) => e.type === 'BOOKMARK' && BigInt(e.resourceVersion) >= BigInt(now)),
      `a BOOKMARK at ${now} or later`,
    );
    expect(w.changes()).toEqual([]);
    w.close();
  });
});
