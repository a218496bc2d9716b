import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SubscriberLimits } from '../../src/http/events-route.ts';
import { ApiError } from '../../src/domain/errors.ts';

const codeOf = (action: () => unknown) => {
  try {
    action();
  } catch (error) {
    return (error as ApiError).code;
  }
  return null;
};

describe('SubscriberLimits', () => {
  it('checks the global limit first, then the per-boundary limit, at and one past each edge', () => {
    const limits = new SubscriberLimits(3, 2);
    const a1 = limits.acquire('a');
    limits.acquire('a');
    assert.equal(codeOf(() => limits.acquire('a')), 'tenant_event_subscriber_limit');
    limits.acquire('b');
    assert.equal(codeOf(() => limits.acquire('b')), 'event_subscriber_limit');
    a1();
    a1();
    assert.equal(codeOf(() => limits.acquire('b')), null, 'a released slot is free again, released once only');
    assert.equal(codeOf(() => limits.acquire('a')), 'event_subscriber_limit');
  });

  it('bounds a single-user boundary by the global limit only', () => {
    const limits = new SubscriberLimits(2, null);
    limits.acquire('default');
    limits.acquire('default');
    assert.equal(codeOf(() => limits.acquire('default')), 'event_subscriber_limit');
  });
});
