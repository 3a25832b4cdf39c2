/**
 * /livez and /readyz (docs/API.md §10): public, 200 while serving / when ready, 503 problem+json
 * naming the reasons when an enabled plugin has not started or the store does not answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUSLY, call, STORES, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { manifest, pluginsDir, PLUGINS, type PluginsDir } from '../plugins/fixtures.js';
import { ownFerret, type OwnFerret } from '../hardening/processes.js';

describe.each(STORES)('health endpoints (%s)', (kind) => {
  let dir: PluginsDir;
  let gw: TestGateway;
  beforeAll(async () => {
    dir = await pluginsDir();
    await dir.write('fine', { 'plugin.yaml': manifest({ name: 'fine' }) });
    await dir.write('moody', {
      'plugin.yaml': manifest({ name: 'moody', enabled: false }),
      'index.mjs': `export default { start() { throw new Error('cannot reach the moon'); } };\n`,
    });
    gw = await startTestGateway(kind, { pluginsDir: dir.dir });
  });
  afterAll(async () => {
    await gw?.dispose();
    await dir?.remove();
  });

  it('/livez and /readyz answer 200 to anyone; verbose lists the checks; other parameters get 400', async () => {
    const live = await call(gw, 'GET', '/livez', undefined, ANONYMOUSLY);
    expect(live.status).toBe(200);
    expect(live.body.status).toBe('ok');
    const ready = await call(gw, 'GET', '/readyz', undefined, ANONYMOUSLY);
    expect(ready.status).toBe(200);
    const verbose = await call(gw, 'GET', '/readyz?verbose', undefined, ANONYMOUSLY);
    expect(verbose.status).toBe(200);
    expect(verbose.body.checks.map((c: { name: string }) => c.name)).toEqual(['store', 'plugins']);
    expect((await call(gw, 'GET', '/livez?verbose=1', undefined, ANONYMOUSLY)).status).toBe(200);
    const typo = await call(gw, 'GET', '/readyz?verbos', undefined, ANONYMOUSLY);
    expect(typo.status).toBe(400);
    expect(typo.headers.get('content-type')).toBe('application/problem+json');
  });

  it('/readyz is 503 naming the plugin while an enabled plugin has not started, 200 again once it is disabled', async () => {
    expect((await call(gw, 'PATCH', `${PLUGINS}/moody`, { spec: { enabled: true } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    let ready = await call(gw, 'GET', '/readyz', undefined, ANONYMOUSLY);
    for (let i = 0; i < 100 && ready.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      ready = await call(gw, 'GET', '/readyz', undefined, ANONYMOUSLY);
    }
    expect(ready.status).toBe(503);
    expect(ready.headers.get('content-type')).toBe('application/problem+json');
    expect(ready.body.detail).toContain('plugin "moody"');
    expect(ready.body.detail).not.toContain('fine');
    // Liveness is not readiness.
    expect((await call(gw, 'GET', '/livez', undefined, ANONYMOUSLY)).status).toBe(200);
    expect((await call(gw, 'PATCH', `${PLUGINS}/moody`, { spec: { enabled: false } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    for (let i = 0; i < 100 && ready.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 50));
      ready = await call(gw, 'GET', '/readyz', undefined, ANONYMOUSLY);
    }
    expect(ready.status).toBe(200);
  });
});

describe('/readyz when the store does not answer (mongodb on an own FerretDB)', () => {
  let ferret: OwnFerret;
  let gw: TestGateway;
  beforeAll(async () => {
    ferret = await ownFerret();
    gw = await startTestGateway('mongodb', { mongodbUrl: ferret.url('svc_readyz'), limits: { storeTimeoutMs: 2000 } });
  });
  afterAll(async () => {
    ferret?.signal('SIGCONT');
    await gw?.dispose();
    await ferret?.dispose();
  });

  it('503 naming the store while FerretDB is paused, 200 once it is back; /livez stays 200', async () => {
    expect((await call(gw, 'GET', '/readyz', undefined, ANONYMOUSLY)).status).toBe(200);
    await ferret.pause();
    try {
      const ready = await call(gw, 'GET', '/readyz', undefined, ANONYMOUSLY);
      expect(ready.status).toBe(503);
      expect(ready.body.detail).toContain('store');
      expect((await call(gw, 'GET', '/livez', undefined, ANONYMOUSLY)).status).toBe(200);
    } finally {
      ferret.signal('SIGCONT');
    }
    // Back within seconds; the bound is generous for a machine busy with other test files (the
    // driver notices the server again at its next heartbeat, every 2 s).
    let status = 0;
    for (const end = Date.now() + 30_000; status !== 200 && Date.now() < end; ) {
      status = (await call(gw, 'GET', '/readyz', undefined, ANONYMOUSLY)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
  }, 60_000);
});
