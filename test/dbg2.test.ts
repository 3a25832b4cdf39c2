import { it } from 'vitest';
import { call, startTestGateway } from './helpers/gateway.js';
import pino from 'pino';
it('dbg', async () => {
  const gw = await startTestGateway('mongodb', { logger: pino({ level: 'warn' }) as never });
  const content = 'x'.repeat(1_000_000);
  for (let i = 0; i < 34; i++) { const r = await call(gw, 'POST', '/apis/content.svc.run/v1alpha1/posts', { metadata: { name: `big-${i}` }, spec: { title: 't', slug: `big-${i}`, content, published: true, publishTime: new Date().toISOString() } }); console.log(i, r.status); }
  await gw.dispose();
}, 290000);
