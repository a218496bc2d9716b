import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestId } from '../../src/http/request-id.ts';

const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('request ids are UUIDv7 whose first 48 bits are the current time in milliseconds', () => {
  const before = Date.now();
  const id = requestId();
  const after = Date.now();
  assert.match(id, UUIDV7);
  const millis = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  assert.ok(millis >= before && millis <= after, `${millis} not within ${before}..${after}`);
});

test('request ids do not repeat, even within one millisecond', () => {
  const ids = new Set(Array.from({ length: 20_000 }, () => requestId()));
  assert.equal(ids.size, 20_000);
  for (const id of ids) assert.match(id, UUIDV7);
});
