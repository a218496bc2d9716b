import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeUuid, uuidv7 } from '../../src/domain/ids.ts';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('uuidv7', () => {
  it('makes version-7, RFC-variant ids that sort in the order they were made, and never twice the same', () => {
    // enough ids to refill the random pool many times over and to cross many milliseconds
    const ids = Array.from({ length: 50_000 }, () => uuidv7());
    for (const id of ids) assert.match(id, V7);
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('carries the time it was made in its first 48 bits', () => {
    const before = Date.now();
    const id = uuidv7();
    const millis = Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
    assert.ok(millis >= before && millis <= Date.now() + 1, `${millis} against ${before}`);
  });

  it('fills its random part from the random source: the 62 bits after the variant differ from id to id', () => {
    const tails = Array.from({ length: 2_000 }, () => uuidv7().slice(-12));
    // bytes that were never filled (zeros, or one repeated chunk of a stale pool) would repeat
    assert.equal(new Set(tails).size, tails.length);
    const ones = tails.join('').split('').reduce((sum, digit) => sum + [...Number.parseInt(digit, 16).toString(2)].filter((bit) => bit === '1').length, 0);
    const share = ones / (tails.length * 48);
    assert.ok(share > 0.47 && share < 0.53, `share of one bits ${share}`);
  });

  it('is accepted in any case by normalizeUuid', () => {
    const id = uuidv7();
    assert.equal(normalizeUuid(id.toUpperCase()), id);
    assert.equal(normalizeUuid(`${id}0`), null);
  });
});
