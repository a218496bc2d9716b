import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ELLIPSIS, EVENT_TEXT_LIMIT, boundEventText, cutAtCodeUnits } from '../../src/domain/event-text.ts';

describe('boundEventText', () => {
  it('uses the limit SPEC.md §8 gives', () => {
    assert.equal(EVENT_TEXT_LIMIT, 16383);
    assert.equal(ELLIPSIS, '…');
  });

  it('keeps short and empty text untouched', () => {
    assert.deepEqual(boundEventText(''), { text: '', truncated: false });
    assert.deepEqual(boundEventText('hello'), { text: 'hello', truncated: false });
  });

  it('keeps text of exactly 16,383 characters untouched', () => {
    const text = 'a'.repeat(16383);
    const bounded = boundEventText(text);
    assert.equal(bounded.truncated, false);
    assert.equal(bounded.text, text);
  });

  it('cuts text of 16,384 characters to 16,383 plus an ellipsis', () => {
    const bounded = boundEventText('a'.repeat(16383) + 'b');
    assert.equal(bounded.truncated, true);
    assert.equal(bounded.text, 'a'.repeat(16383) + '…');
    assert.equal(bounded.text.length, 16384);
  });

  it('never splits a surrogate pair that straddles the limit', () => {
    const text = 'a'.repeat(16382) + '😀' + 'tail';
    const bounded = boundEventText(text);
    assert.equal(bounded.truncated, true);
    assert.equal(bounded.text, 'a'.repeat(16382) + '…');
  });

  it('keeps a surrogate pair that ends exactly at the limit', () => {
    const text = 'a'.repeat(16381) + '😀' + 'tail';
    const bounded = boundEventText(text);
    assert.equal(bounded.text, 'a'.repeat(16381) + '😀…');
  });

  it('keeps a surrogate pair that exactly fills the limit when nothing follows', () => {
    const text = 'a'.repeat(16381) + '😀';
    assert.deepEqual(boundEventText(text), { text, truncated: false });
  });

  it('cuts a lone high surrogate at the limit like any other unit', () => {
    const text = 'a'.repeat(16382) + '\ud83d' + 'bc';
    assert.equal(boundEventText(text).text, 'a'.repeat(16382) + '\ud83d…');
  });
});

describe('cutAtCodeUnits', () => {
  it('returns text within the limit unchanged', () => {
    assert.equal(cutAtCodeUnits('abc', 3), 'abc');
    assert.equal(cutAtCodeUnits('abc', 10), 'abc');
  });

  it('cuts to the limit', () => {
    assert.equal(cutAtCodeUnits('abcdef', 4), 'abcd');
    assert.equal(cutAtCodeUnits('abc', 0), '');
  });

  it('backs off one unit rather than split a pair', () => {
    assert.equal(cutAtCodeUnits('😀x', 1), '');
    assert.equal(cutAtCodeUnits('x😀y', 2), 'x');
    assert.equal(cutAtCodeUnits('x😀y', 3), 'x😀');
  });
});
