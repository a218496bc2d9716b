import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseGoDuration, parseRetryAfter, retryAfterMsFromHeaders } from '../../../src/agent/providers/retry-hints.ts';
import { OPENAI_RATE_LIMITS } from '../../../src/agent/providers/openai-responses/rate-limits.ts';
import { ANTHROPIC_RATE_LIMITS } from '../../../src/agent/providers/anthropic-messages/rate-limits.ts';

const NOW = Date.parse('2025-08-21T12:40:00Z');

describe('parseGoDuration', () => {
  test('reads the durations OpenAI sends in x-ratelimit-reset-*', () => {
    assert.equal(parseGoDuration('12ms'), 12);
    assert.equal(parseGoDuration('6m0s'), 360_000);
    assert.equal(parseGoDuration('1h2m3s'), 3_723_000);
    assert.equal(parseGoDuration('1.5s'), 1500);
    assert.equal(parseGoDuration('250us'), 0);
    assert.equal(parseGoDuration('2'), 2000, 'a bare number is seconds');
  });

  test('rejects placeholders and garbage', () => {
    assert.equal(parseGoDuration('-1'), null);
    assert.equal(parseGoDuration(''), null);
    assert.equal(parseGoDuration('soon'), null);
    assert.equal(parseGoDuration('5x'), null);
  });
});

describe('parseRetryAfter', () => {
  test('takes seconds, fractional seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('3', NOW), 3000);
    assert.equal(parseRetryAfter('0.25', NOW), 250);
    assert.equal(parseRetryAfter('Thu, 21 Aug 2025 12:40:05 GMT', NOW), 5000);
    assert.equal(parseRetryAfter('Thu, 21 Aug 2025 12:39:00 GMT', NOW), 0, 'a date in the past means now');
    assert.equal(parseRetryAfter('later', NOW), null);
  });
});

describe('retryAfterMsFromHeaders', () => {
  test('retry-after-ms wins over retry-after, which wins over reset headers', () => {
    const all = { 'retry-after-ms': '150', 'retry-after': '9', 'x-ratelimit-reset-requests': '1m0s' };
    assert.equal(retryAfterMsFromHeaders(all, NOW, OPENAI_RATE_LIMITS), 150);
    const { 'retry-after-ms': _unused, ...withoutMs } = all;
    assert.equal(retryAfterMsFromHeaders(withoutMs, NOW, OPENAI_RATE_LIMITS), 9000);
  });

  test('accepts Fetch Headers and plain objects with any header case', () => {
    assert.equal(retryAfterMsFromHeaders(new Headers({ 'Retry-After': '2' }), NOW), 2000);
    assert.equal(retryAfterMsFromHeaders({ 'Retry-After': '2' }, NOW), 2000);
    assert.equal(retryAfterMsFromHeaders({ 'retry-after': ['4'] }, NOW), 4000);
  });

  test('OpenAI reset durations: the exhausted limit decides', () => {
    const headers = {
      'x-ratelimit-remaining-requests': '99',
      'x-ratelimit-reset-requests': '120ms',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '6m0s',
    };
    assert.equal(retryAfterMsFromHeaders(headers, NOW, OPENAI_RATE_LIMITS), 360_000);
    assert.equal(retryAfterMsFromHeaders(headers, NOW, ANTHROPIC_RATE_LIMITS), null, 'another provider\'s headers are not its own');
  });

  test('without remaining counts the soonest reset is used', () => {
    assert.equal(retryAfterMsFromHeaders({ 'x-ratelimit-reset-requests': '2s', 'x-ratelimit-reset-tokens': '500ms' }, NOW, OPENAI_RATE_LIMITS), 500);
  });

  test('Anthropic reset timestamps are absolute RFC 3339 times', () => {
    const headers = {
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': '2025-08-21T12:40:59Z',
      'anthropic-ratelimit-tokens-remaining': '5000',
      'anthropic-ratelimit-tokens-reset': '2025-08-21T12:40:01Z',
    };
    assert.equal(retryAfterMsFromHeaders(headers, NOW, ANTHROPIC_RATE_LIMITS), 59_000);
  });

  test('Azure placeholders and missing headers give null', () => {
    assert.equal(retryAfterMsFromHeaders({ 'x-ratelimit-reset-requests': '-1', 'x-ratelimit-reset-tokens': '' }, NOW, OPENAI_RATE_LIMITS), null);
    assert.equal(retryAfterMsFromHeaders({}, NOW), null);
    assert.equal(retryAfterMsFromHeaders(null, NOW), null);
    assert.equal(retryAfterMsFromHeaders({ 'retry-after': 'never' }, NOW), null);
  });
});
