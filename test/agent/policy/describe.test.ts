import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describePolicy } from '../../../src/agent/policy/describe.ts';
import { READ_ONLY_PROGRAM_NAMES } from '../../../src/agent/policy/read-only-commands.ts';

test('the policy summary names every rule, option set and read-only program', () => {
  const text = describePolicy();
  for (const phrase of ['refused', 'Plan mode', 'root_access', 'tool_approval', 'allow_once, allow_session, deny', 'allow, deny', 'yolo']) {
    assert.ok(text.includes(phrase), phrase);
  }
  for (const name of READ_ONLY_PROGRAM_NAMES) assert.ok(text.includes(`\`${name}\``), name);
});
