// Near misses of the projection budget (domain/projection*.ts, CONTRACT.md §8) that its mutation run
// asked for: each cut at the exact node or character where it happens, what is given back when a
// container is removed hollow, the redaction marker's all-or-nothing edge, and the inputs that are
// not JSON or not the expected shape. Budgets are built small so that the edge is a few values away.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canStart, createProjectionBudget, REDACTED } from '../../src/domain/projection-budget.ts';
import { MAX_OPAQUE_DEPTH, projectAgents, projectHistoryItems, projectJson, projectText } from '../../src/domain/projection.ts';

test('a string starts when its first code point fits: one character for U+FFFF, two for an astral one', () => {
  assert.equal(canStart(createProjectionBudget(1, 1), 0, '\uffffx'), true, 'U+FFFF is one UTF-16 unit');
  assert.equal(canStart(createProjectionBudget(1, 1), 0, '😀x'), false, 'an astral code point is two');
  assert.equal(canStart(createProjectionBudget(2, 1), 0, '😀x'), true);
  assert.equal(canStart(createProjectionBudget(2, 0), 0, 'x'), false, 'no node left');
  assert.equal(canStart(createProjectionBudget(3, 1), 2, 'x'), true, 'key and first character exactly');
  assert.equal(canStart(createProjectionBudget(2, 1), 2, 'x'), false);
});

test('projectText: nothing fits, so the turn is marked and the text is empty', () => {
  const budget = createProjectionBudget(0, 10);
  assert.equal(projectText('abc', budget), '');
  assert.deepEqual(budget, { textChars: 0, nodes: 10, truncated: true });
});

test('projectJson: what is not JSON costs nothing; what cannot start is null and marked', () => {
  for (const value of [undefined, () => 1, Symbol('s'), 10n]) {
    const budget = createProjectionBudget(100, 10);
    assert.equal(projectJson(value, budget), null);
    assert.deepEqual(budget, { textChars: 100, nodes: 10, truncated: false }, String(typeof value));
  }
  const noText = createProjectionBudget(0, 10);
  assert.equal(projectJson('abc', noText), null);
  assert.equal(noText.truncated, true);
  const noNode = createProjectionBudget(100, 0);
  assert.equal(projectJson(5, noNode), null);
  assert.equal(noNode.truncated, true);
});

test('a container cut before its first child is removed, its node and key given back, and its holder marked', () => {
  // the root array fits (1 node) but its element does not: nothing at all, everything refunded
  const hollowRoot = createProjectionBudget(100, 1);
  assert.equal(projectJson(['x'], hollowRoot), null);
  assert.deepEqual(hollowRoot, { textChars: 100, nodes: 1, truncated: true });
  // the inner array of `ab` is hollow: the key `ab` (2 characters) and both nodes come back
  const hollowInner = createProjectionBudget(100, 2);
  assert.equal(projectJson({ ab: ['xyz'] }, hollowInner), null);
  assert.deepEqual(hollowInner, { textChars: 100, nodes: 2, truncated: true });
  // beside a kept field, the hollow array is removed and the object marked
  const besideArray = createProjectionBudget(100, 3);
  assert.deepEqual(projectJson({ k: 1, arr: ['xyz'] }, besideArray), { k: 1, projectionTruncated: true });
  assert.equal(besideArray.textChars, 99, 'only the key k was spent');
  // a hollow object marks only itself, and is removed: the holder must be marked again
  const besideObject = createProjectionBudget(2, 10);
  assert.deepEqual(projectJson({ k: 1, o: { x: 'y' } }, besideObject), { k: 1, projectionTruncated: true });
  assert.equal(besideObject.textChars, 1, 'the key o was given back');
});

test('the redaction marker is kept whole or not at all: exactly its key and ten characters, and one node', () => {
  const key = 'encrypted_content';
  assert.deepEqual(projectJson({ [key]: 'secret' }, createProjectionBudget(key.length + REDACTED.length, 2)), { [key]: REDACTED });
  assert.equal(projectJson({ [key]: 'secret' }, createProjectionBudget(key.length + REDACTED.length - 1, 2)), null);
  assert.equal(projectJson({ [key]: 'secret' }, createProjectionBudget(100, 1)), null, 'the object takes the only node');
  assert.deepEqual(projectJson({ a: 1, [key]: 'secret' }, createProjectionBudget(100, 2)), { a: 1, projectionTruncated: true });
});

test('a key named __proto__ is an ordinary own field; a key named undefined is read once', () => {
  const projected = projectJson(JSON.parse('{"__proto__": {"polluted": true}}'), createProjectionBudget()) as Record<string, unknown>;
  assert.deepEqual(Object.getOwnPropertyDescriptor(projected, '__proto__'), { value: { polluted: true }, writable: true, enumerable: true, configurable: true });
  assert.equal(Object.getPrototypeOf(projected), Object.prototype);
  assert.deepEqual(projectJson({ undefined: 1, b: 2 }, createProjectionBudget()), { undefined: 1, b: 2 });
});

test('a null or a number nested one level past the deepest container is still kept: only containers count', () => {
  let value: unknown = [null, 7, 'x'];
  for (let level = 0; level < MAX_OPAQUE_DEPTH; level++) value = [value];
  const budget = createProjectionBudget();
  let projected = projectJson(value, budget);
  for (let level = 0; level < MAX_OPAQUE_DEPTH; level++) projected = (projected as unknown[])[0];
  assert.deepEqual(projected, [null, 7, 'x']);
  assert.equal(budget.truncated, false);
});

test('lists that are not lists project to nothing and cost nothing; a list that cannot start is marked, an empty one not', () => {
  for (const value of ['items', null, { length: 1 }, 5]) {
    const budget = createProjectionBudget(100, 10);
    assert.deepEqual(projectHistoryItems(value as unknown[], budget), []);
    assert.deepEqual(budget, { textChars: 100, nodes: 10, truncated: false }, JSON.stringify(value));
  }
  const agent = { path: '/root', status: 'running', model: null, steps: [] };
  const none = createProjectionBudget(0, 0);
  assert.deepEqual(projectAgents([agent], none), []);
  assert.equal(none.truncated, true);
  const empty = createProjectionBudget(0, 0);
  assert.deepEqual(projectAgents([], empty), []);
  assert.deepEqual(empty, { textChars: 0, nodes: 0, truncated: false }, 'an empty list that cannot start spends nothing');
});
