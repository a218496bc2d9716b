import assert from 'node:assert/strict';
import { test } from 'node:test';
import { andThen } from '../../src/http/now-or-later.ts';

test('a value that is here is used at once; a promise is waited for', async () => {
  const order: string[] = [];
  const now = andThen(2, (value) => {
    order.push('now');
    return value * 10;
  });
  assert.equal(now, 20);
  const later = andThen(Promise.resolve(3), (value) => {
    order.push('later');
    return value * 10;
  });
  assert.ok(later instanceof Promise);
  order.push('after the call');
  assert.equal(await later, 30);
  assert.deepEqual(order, ['now', 'after the call', 'later']);
});

test('a failure stays where it happened: thrown now, or a rejected promise later', async () => {
  assert.throws(() => andThen(1, () => { throw new Error('now'); }), /now/);
  await assert.rejects(Promise.resolve(andThen(Promise.reject(new Error('later')), () => 1)), /later/);
});
