import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SubscriberRegistry } from '../../src/events/subscriber-registry.ts';
import type { EventRecord } from '../../src/events/event-record.ts';

function record(sessionId: string | null): EventRecord {
  return { id: 1, type: 'response.text.delta', turnId: null, sessionId, at: new Date(0).toISOString(), data: {} };
}

test('an event is offered to the subscribers of every event and of its own session only', () => {
  const registry = new SubscriberRegistry<{ name: string; sessionId: string | null }>();
  const all = { name: 'all', sessionId: null };
  const a1 = { name: 'a1', sessionId: 'a' };
  const a2 = { name: 'a2', sessionId: 'a' };
  const b = { name: 'b', sessionId: 'b' };
  for (const entry of [a1, all, b, a2]) registry.add(entry);
  const names = (of: EventRecord | null) => [...registry.targetsOf(of)].map((entry) => entry.name);
  assert.deepEqual(names(record('a')), ['all', 'a1', 'a2']);
  assert.deepEqual(names(record('b')), ['all', 'b']);
  assert.deepEqual(names(record('c')), ['all']);
  assert.deepEqual(names(record(null)), ['all']);
  // a replay.reset owed by the log goes to everyone
  assert.deepEqual(names(null).sort(), ['a1', 'a2', 'all', 'b']);
  assert.equal(registry.size, 4);
});

test('removal is counted once and an emptied session leaves no group behind', () => {
  const registry = new SubscriberRegistry<{ sessionId: string | null }>();
  const only = { sessionId: 'a' };
  registry.add(only);
  registry.add(only);
  assert.equal(registry.size, 1);
  registry.delete(only);
  registry.delete(only);
  assert.equal(registry.size, 0);
  assert.deepEqual([...registry.targetsOf(null)], []);
  registry.add(only);
  assert.deepEqual([...registry.targetsOf(record('a'))], [only]);
});
