/**
 * observability/series.ts: the plain counters and histograms are written by prom-client's registry exactly
 * as its own Counter and Histogram would write the same observations.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PlainCounter, PlainHistogram } from '../../src/observability/series.js';

const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 1];
type L = Record<string, string>;
const key = (l: L) => Object.values(l).join('\n');

describe('plain series (observability/series.ts)', () => {
  it('write the same text exposition and JSON as prom-client for the same observations', async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const counter = new Counter({ name: 'x_total', help: 'Things "counted".', labelNames: ['verb', 'code'], registers: [theirs] });
    const histogram = new Histogram({ name: 'x_seconds', help: 'Latency.', labelNames: ['verb', 'path'], buckets: BOUNDS, registers: [theirs] });
    const plainCounter = new PlainCounter('x_total', 'Things "counted".', ours);
    const plainHistogram = new PlainHistogram('x_seconds', 'Latency.', ours, BOUNDS);
    // Values on a bound, between bounds, above the last one and zero; label values that need escaping.
    const observations: [L, number][] = [
      [{ verb: 'get', path: 'a' }, 0.001],
      [{ verb: 'get', path: 'a' }, 0.0011],
      [{ verb: 'get', path: 'a' }, 0],
      [{ verb: 'list', path: 'q"uote\\back' }, 5],
      [{ verb: 'get', path: 'a' }, 0.75],
      [{ verb: 'list', path: 'q"uote\\back' }, 0.0025],
    ];
    for (const [labels, v] of observations) {
      histogram.observe(labels, v);
      plainHistogram.observe(key(labels), () => ({ ...labels }), v);
      const c = { verb: labels.verb!, code: v > 1 ? '500' : '200' };
      counter.inc(c);
      plainCounter.inc(key(c), () => c);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('x_seconds_bucket{le="0.001",verb="get",path="a"} 2');
    expect(text).toContain('x_seconds_bucket{le="+Inf",verb="list",path="q\\"uote\\\\back"} 2');
    expect(text).toContain('x_total{verb="get",code="200"} 4');
    // prom-client adds `exemplar: null` to its buckets (exemplars are off here); nothing else differs.
    const withoutExemplars = (ms: Awaited<ReturnType<Registry['getMetricsAsJSON']>>) =>
      ms.map((m) => ({ ...m, values: m.values.map((v) => ({ ...v, exemplar: undefined })) }));
    expect(withoutExemplars(await ours.getMetricsAsJSON())).toEqual(withoutExemplars(await theirs.getMetricsAsJSON()));
  });

  it('a series is named once, by its key; resetMetrics empties every series', async () => {
    const registry = new Registry();
    const c = new PlainCounter('y_total', 'Y.', registry);
    let named = 0;
    for (let i = 0; i < 3; i++) c.inc('k', () => (named++, { a: 'k' }));
    expect(named).toBe(1);
    expect(await registry.metrics()).toContain('y_total{a="k"} 3');
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain('y_total{');
  });
});
