/** The models of the keyset tests (REST and GraphQL): indexed text, numeric and array fields. */
export const ITEMS = '/apis/keyset.example.com/v1/items';
export const OTHERS = '/apis/keyset.example.com/v1/others';

const model = (kind: string, plural: string) => `    - group: keyset.example.com
      version: v1
      kind: ${kind}
      plural: ${plural}
      schema:
        properties:
          spec:
            type: object
            properties:
              team: { type: string }
              rank: { type: integer }
              tags: { type: array, items: { type: string } }
              note: { type: string }
      indexes:
        - { name: spec.team, path: spec.team }
        - { name: spec.rank, path: spec.rank }
        - { name: spec.tags, path: spec.tags }
`;

export const KEYSET_PLUGIN = `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata:
  name: keyset
spec:
  version: 1.0.0
  models:
${model('Item', 'items')}${model('Other', 'others')}`;

/** Item `i` of the fixed data: few distinct values, so ties and missing values abound. */
export function item(i: number) {
  const spec: Record<string, unknown> = {};
  if (i % 5) spec.team = ['a', 'b', 'c'][i % 3];
  if (i % 4) spec.rank = [3, 10, 100, -2, 7][i % 5];
  if (i % 3) spec.tags = [`t${i % 4}`, `t${i % 2}`];
  return { metadata: { name: `i-${String(i).padStart(2, '0')}`, labels: i % 2 ? { app: 'web' } : { app: 'db' } }, spec };
}

