/**
 * Continue tokens and connection cursors (src/query/cursor.ts): every key round-trips, whatever
 * its characters (the ASCII fast path and the UTF-8 path must decode alike), and a token altered
 * in any one place, or sent with another query, is a 400.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadRequest } from '../../src/errors/index.js';
import { cursorEncoder, decodeCursor, encodeCursor, type CursorScope } from '../../src/query/cursor.js';
import type { SortKey } from '../../src/store/types.js';

const scope: CursorScope = {
  model: 'example.com/v1/things',
  where: [{ index: 'l:example.com/tier', op: '=', values: ['a'] } as never],
  sort: [{ index: 'f:spec.name', direction: 'asc' } as never],
};
const value = fc.oneof(fc.constant(null), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer());
const key = fc.tuple(value, fc.string({ unit: 'grapheme-ascii', minLength: 1 })) as fc.Arbitrary<SortKey>;

describe('cursors', () => {
  it('round-trip every key, ASCII or not, through one encoder per page as through encodeCursor', () => {
    fc.assert(
      fc.property(fc.array(key, { minLength: 1, maxLength: 5 }), (keys) => {
        const encode = cursorEncoder(scope);
        for (const k of keys) {
          const token = encode(k);
          expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
          expect(token).toBe(encodeCursor(scope, k));
          expect(decodeCursor(scope, token)).toEqual(JSON.parse(JSON.stringify(k)));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a token with any one character changed, or sent with another query, is a 400', () => {
    const token = encodeCursor(scope, ['Ada Lövelace', 'ada']);
    const other: CursorScope[] = [
      { ...scope, model: 'example.com/v1/others' },
      { ...scope, where: [] },
      { ...scope, sort: [{ index: 'f:spec.name', direction: 'desc' } as never] },
    ];
    for (const s of other) expect(() => decodeCursor(s, token)).toThrow(BadRequest);
    const [k, digest] = JSON.parse(Buffer.from(token, 'base64url').toString()) as [SortKey, string];
    for (let i = 0; i < digest.length; i++) {
      const changed = digest.slice(0, i) + (digest[i] === 'A' ? 'B' : 'A') + digest.slice(i + 1);
      expect(() => decodeCursor(scope, Buffer.from(JSON.stringify([k, changed])).toString('base64url'))).toThrow(BadRequest);
    }
    for (const altered of [['Ada Lovelace', 'ada'], ['Ada Lövelace', 'adb'], ['Ada Lövelace', 'ada', 'x'], [null, 'ada']]) {
      expect(() => decodeCursor(scope, Buffer.from(JSON.stringify([altered, digest])).toString('base64url'))).toThrow(BadRequest);
    }
  });
});
